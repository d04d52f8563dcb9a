# frozen_string_literal: true

# What a user of an installed gem does first, against the gem installed in GEM_HOME (never the checkout's lib/):
# spec/gem_install_spec.rb installs the source gem and the platform gem each into an empty GEM_HOME and runs this
# file from a directory outside the checkout against each. It needs no spec_helper and is left out of the default
# `rspec` run (.rspec excludes spec/smoke/), since it means nothing against the checkout.
#
# LITTLEGHOST_SMOKE_PLATFORM names the gem expected ("ruby" for the source gem, e.g. "x86_64-linux").
require "littleghost/sandbox"
require "socket"
require "tmpdir"

RSpec.describe "An installed littleghost-sandbox gem" do # rubocop:disable RSpec/DescribeClass
  around do |example|
    Dir.mktmpdir("lg-smoke") do |root|
      @root = root
      @workspace = LittleGhost::Workspace.new(root: root, paths: {source: "source"}).open
      example.run
    ensure
      @sandbox&.close
      @workspace&.close
    end
  end

  # The workspace root writable, source/ read-only.
  def bubblewrap(network: :none)
    policy = {files: {root: :read_write, source: :read_only}, network: network}
    @sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: @workspace, policy: policy).open
  end

  it "is the gem in GEM_HOME, for the expected platform, with its extension and helper side by side" do
    spec = Gem.loaded_specs.fetch("littleghost-sandbox")
    expect(spec.full_gem_path).to start_with(File.join(ENV.fetch("GEM_HOME"), "gems", ""))
    expect(spec.platform.to_s).to eq(ENV.fetch("LITTLEGHOST_SMOKE_PLATFORM"))
    extension = $LOADED_FEATURES.grep(%r{/littleghost_sandbox\.(so|bundle)\z})
    expect(extension.size).to eq(1)
    expect(File.executable?(File.join(File.dirname(extension.first), "littleghost-sandbox-helper"))).to be(true)
  end

  it "reads and writes inside the workspace and refuses a path outside it" do
    File.write(File.join(@root, "source", "app.rb"), "puts :hi\n")
    sandbox = bubblewrap
    expect(sandbox.write("notes.md", "hello\n")).to eq("Wrote 6 bytes to notes.md")
    expect(File.read(File.join(@root, "notes.md"))).to eq("hello\n")
    expect(sandbox.read("source/app.rb")).to eq("puts :hi\n")
    expect { sandbox.write("source/app.rb", "x") }.to raise_error(LittleGhost::ToolError, /read-only/)
    expect { sandbox.read("../etc/passwd") }.to raise_error(LittleGhost::ToolError, /traversal/)
    expect(File.read(File.join(@root, "source", "app.rb"))).to eq("puts :hi\n")
  end

  it "runs a program under Bubblewrap that writes only where its grants allow" do
    File.write(File.join(@root, "source", "app.rb"), "puts :hi\n")
    sandbox = bubblewrap
    script = "cat source/app.rb; echo made > out.txt; echo x > source/app.rb || echo refused; " \
             "echo x > /etc/littleghost-smoke || echo refused"
    result = sandbox.execute_program(["/bin/sh", "-c", script], timeout: 30)
    expect(result.stdout).to eq("puts :hi\nrefused\nrefused\n")
    expect(File.read(File.join(@root, "out.txt"))).to eq("made\n")
    expect(File.read(File.join(@root, "source", "app.rb"))).to eq("puts :hi\n")
    expect(File.exist?("/etc/littleghost-smoke")).to be(false)
  end

  it "fetches from an allowlisted server through the gem's relay helper and gets 403 from another" do
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
    servers = Array.new(2) { TCPServer.new("127.0.0.1", 0) }
    threads = servers.map do |server|
      Thread.new do
        loop do
          client = server.accept
          while (line = client.gets) && line != "\r\n"; end
          client.write("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nallowed")
          client.close
        end
      rescue IOError, SystemCallError
        nil
      end
    end
    allowed, other = servers.map { |server| server.addr[1] }
    sandbox = bubblewrap(network: {mode: :allowlist, allow: ["localhost:#{allowed}"],
                                   gateway: {provider: :builtin, allow_private_destinations: true}})
    curl = ->(port) do
      sandbox.execute_program(["/usr/bin/curl", "-sS", "--max-time", "20", "-w", " %{http_code}", "http://localhost:#{port}/"],
                              timeout: 30, environment: {"NO_PROXY" => "", "no_proxy" => ""}).stdout
    end
    expect(curl.call(allowed)).to eq("allowed 200")
    expect(curl.call(other)).to end_with(" 403")
  ensure
    threads&.each(&:kill)
    servers&.each(&:close)
  end

  it "stops a program's output at max_output_bytes" do
    sandbox = bubblewrap
    result = sandbox.execute_program(["/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x"], timeout: 30,
                                                                                                max_output_bytes: 1000)
    expect(result.stdout).to eq("#{"x" * 1000}\n[output truncated]")
  end
end
