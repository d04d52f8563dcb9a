# frozen_string_literal: true

require "spec_helper"

# A backend written in Ruby must work end to end (0.4): subclass, call super,
# override operations, register, resolve, build from a declaration, and have
# the base class and Scope call its overrides through Ruby dispatch.
RSpec.describe "a custom sandbox provider written in Ruby" do
  # Serves files from an in-memory Hash and records what the framework asked of it.
  let(:memory_backend) do
    Class.new(LittleGhost::Sandbox) do
      attr_reader :files, :log, :extra

      def initialize(workspace:, policy: nil, profiles: {}, limits: {}, files: {}, extra: nil)
        super(workspace: workspace, policy: policy, profiles: profiles, limits: limits)
        @files = files.dup
        @extra = extra
        @log = []
      end

      def capabilities
        LittleGhost::Sandbox::Capabilities.new(features: %i[filesystem_read process_execute], network_modes: [])
      end

      def read(path, context: nil)
        context&.check!
        @log << [:read, path]
        @files.fetch(path) { raise LittleGhost::ToolError, "Path does not exist" }
      end

      def execute_program(command, timeout:, **options)
        @log << [:execute_program, command, timeout, options]
        {stdout: command.join(" "), exit_code: 0}
      end
    end
  end

  around do |example|
    saved = LittleGhost::Sandbox::TestHooks.provider_snapshot
    example.run
  ensure
    LittleGhost::Sandbox::TestHooks.restore_providers(saved)
  end

  let(:workspace) { open_workspace }

  before { LittleGhost::Sandbox.register_provider(:memory, memory_backend) }

  it "resolves and builds through LittleGhost::Sandbox.build" do
    expect(LittleGhost::Sandbox.resolve_provider(:memory)).to eq(memory_backend)
    sandbox = LittleGhost::Sandbox.build(
      {provider: :memory, files: {root: :read_write}, limits: {read_bytes: 5}, extra: :option,
       profiles: {tiny: {files: [:root]}}},
      workspace: workspace
    )
    expect(sandbox).to be_a(memory_backend)
    expect(sandbox.workspace).to equal(workspace)
    expect(sandbox.policy.files).to eq(root: :read_write)
    expect(sandbox.limits.read_bytes).to eq(5)
    expect(sandbox.extra).to eq(:option)
    expect(sandbox.scope(:tiny).process_grants.map(&:target)).to eq([workspace.root])
  end

  it "uses the Ruby overrides for reads, predicates and execute" do
    sandbox = memory_backend.new(workspace: workspace, files: {"a.md" => "from memory"})
    expect(sandbox.read("a.md")).to eq("from memory")
    expect { sandbox.read("b.md") }.to raise_error(LittleGhost::ToolError, "Path does not exist")
    expect(sandbox.supports?(:read)).to be(true)
    expect(sandbox.writable?).to be(false)
    expect(sandbox.allows?(:execute)).to be(true)
    expect { sandbox.list }.to raise_error(LittleGhost::AbstractMethodError, /does not implement list/)
    execution = sandbox.execute("echo hi", timeout: 3)
    expect(execution[:stdout]).to eq("/bin/sh -c echo hi")
    expect(sandbox.log.last).to eq([:execute_program, ["/bin/sh", "-c", "echo hi"], 3,
                                    {context: nil, max_output_bytes: nil}])
  end

  it "lets a scope of the custom backend delegate processes to its overrides" do
    sandbox = memory_backend.new(workspace: workspace)
    scope = sandbox.scope
    expect(scope.capabilities.features).to eq(%i[filesystem_read process_execute])
    expect(scope.execute_program(%w[ls -l], timeout: 1)[:stdout]).to eq("ls -l")
    expect(sandbox.log.last).to eq([:execute_program, %w[ls -l], 1, {scope: scope}])
    # File operations of a Scope always go through the broker, not the backend's read.
    File.write(File.join(workspace.root, "real.md"), "on disk")
    expect(scope.read("real.md")).to eq("on disk")
  end

  it "is probed as available without options unless it defines its own probe" do
    expect(LittleGhost::Sandbox.probe(:memory)[:available]).to be(true)
    memory_backend.define_singleton_method(:probe) { |**| raise LittleGhost::DependencyError, "memory is full" }
    expect(LittleGhost::Sandbox.probe(:memory)).to include(available: false, reason: "memory is full")
  end
end
