# frozen_string_literal: true

require "open3"
require "rdoc"

# The classes are defined natively (magnus), so their documentation lives in
# lib/littleghost/sandbox/documentation/*.rb as RDoc directives. These examples run rdoc the way `gem install` does
# (the gemspec's rdoc_options, source paths and extra files) and ask ri, so a public method added without
# documentation fails here.
RSpec.describe "API documentation (rdoc and ri)" do
  root = File.expand_path("..", __dir__)
  # The running Ruby's own rdoc and ri (not whichever is first on PATH), so the files they write are the ones this
  # process's RDoc reads.
  rdoc_command = [RbConfig.ruby, Gem.bin_path("rdoc", "rdoc")].freeze
  ri_command = [RbConfig.ruby, Gem.bin_path("rdoc", "ri")].freeze

  # Rust-side helpers with no public methods, and the test-only hooks of `rake compile`.
  internal = %w[
    LittleGhost::Sandbox::Scope::State
    LittleGhost::Sandboxes::Landlock::State
    LittleGhost::Workspace::Identities
    LittleGhost::Sandbox::TestHooks
    LittleGhost::Sandbox::ProcessOwner
  ].freeze

  before(:all) do
    @tmp = Dir.mktmpdir("lg-ri")
    @ri_dir = File.join(@tmp, "ri") # rdoc refuses to write into an existing directory it did not create
    spec = Gem::Specification.load(File.join(root, "littleghost-sandbox.gemspec"))
    args = spec.rdoc_options + spec.source_paths + spec.extra_rdoc_files
    out, status = Open3.capture2e(*rdoc_command, "--ri", "--quiet", "--output", @ri_dir, *args, chdir: root)
    raise "rdoc failed: #{out}" unless status.success?

    # RDoc 6.13 (Ruby 3.4's) takes its options first and the path as a keyword; older RDoc takes the path alone.
    @store = if RDoc::Store.instance_method(:initialize).parameters.first == %i[req options]
               RDoc::Store.new(RDoc::Options.new, path: @ri_dir)
             else
               RDoc::Store.new(@ri_dir)
             end
    @store.load_cache
  end

  after(:all) { FileUtils.rm_rf(@tmp) }

  define_method(:ri) do |name|
    Open3.capture2e(*ri_command, "--no-standard-docs", "--no-pager", "--format=rdoc", "-d", @ri_dir, name)
  end

  def text(comment)
    return "" if comment.nil?

    # RDoc 6.13 (Ruby 3.4's) loads an RDoc::Comment, to be parsed; older RDoc the parsed document itself.
    comment = comment.parse if comment.is_a?(RDoc::Comment)
    comment.accept(RDoc::Markup::ToRdoc.new).strip
  end

  def method_doc(owner, key)
    @store.load_method(owner, key)
  rescue RDoc::Store::MissingFileError
    nil
  end

  # RDoc 6.4 drops a `:singleton-method:` whose name an instance method already has, and records module_function
  # methods as instance methods: accept the instance entry when the module is not a class or when its call-seq
  # shows the class-method form (`Execution.members`).
  def singleton_as_instance_doc(mod, key)
    return unless key.start_with?("::")

    name = key.delete_prefix("::")
    doc = method_doc(mod.name, "##{name}")
    doc if doc && (!mod.is_a?(Class) || doc.call_seq.to_s.include?("#{mod.name}.#{name}"))
  end

  def public_modules(mod = LittleGhost, found = [])
    return found if found.include?(mod)

    found << mod
    mod.constants(false).sort.each do |name|
      value = mod.const_get(name)
      public_modules(value, found) if value.is_a?(Module) && value.name&.start_with?("#{mod.name}::")
    end
    found
  end

  it "lets `ri 'LittleGhost::Sandbox#read'` show the call sequence, the errors and an example" do
    out, status = ri("LittleGhost::Sandbox#read")
    expect(status).to be_success, out
    expect(out).to include("read(path, context: nil) -> String")
    expect(out.gsub(/\s+/, " ")).to include("LittleGhost::ToolError", "Path does not exist")
    expect(out).to include('sandbox.read("notes.md")')
  end

  it "lets ri show the main classes and methods, instance and singleton" do
    {
      "LittleGhost::Sandbox" => "one gate",
      "LittleGhost::Sandbox.probe" => "probe(name, **options)",
      "LittleGhost::Sandbox.build" => "build(declaration, workspace:)",
      "LittleGhost::Sandbox#execute_program" => "timed out",
      "LittleGhost::Sandbox#open" => "open(run: nil) { |sandbox| ... }",
      "LittleGhost::Sandbox#close" => "terminates every live process and ProcessSession",
      "LittleGhost::Sandbox::Scope#write" => "Sandbox scope is read-only",
      "LittleGhost::Sandbox::ProcessSession#wait" => "Program timed out after",
      "LittleGhost::Sandbox::Execution#exit_code" => "exit_code -> Integer or nil",
      "LittleGhost::Workspace#resolve" => "workspace path traversal is not allowed",
      "LittleGhost::Sandboxes::Bubblewrap::new" => "tmpfs_size",
      "LittleGhost::DependencyError" => "registered",
      "LittleGhost.reset_configuration!" => "RSpec.configure",
      "LittleGhost.configure" => "config.sandbox ="
    }.each do |name, fragment|
      out, status = ri(name)
      expect(status).to be_success, "ri #{name} failed: #{out}"
      expect(out.gsub(/\s+/, " ")).to include(fragment), "ri #{name} lacks #{fragment.inspect}:\n#{out}"
    end
  end

  it "documents every public LittleGhost class and module" do
    undocumented = (public_modules.map(&:name) - internal).reject do |name|
      text(@store.load_class(name).comment).length.positive?
    rescue RDoc::Store::MissingFileError
      false
    end
    expect(undocumented).to be_empty, "classes without RDoc: #{undocumented.join(", ")}"
  end

  it "documents every public instance and singleton method (and .new) of every public class, with an example" do
    missing = []
    without_example = []
    (public_modules - internal.filter_map { |name| Object.const_get(name) if Object.const_defined?(name) })
      .each do |mod|
      # A class's methods include those of our own internal modules it mixes in (Execution and Chunk get their Data
      # protocol from one): they are the class's public API and documented with it.
      own = ->(ancestors) { ancestors.select { |a| a == mod || a.singleton_class? || a.name.to_s.start_with?("LittleGhost") } }
      above = mod.is_a?(Class) && mod.superclass
      instance_side = own.call(above ? mod.ancestors.take_while { |a| a != above } : [mod])
      class_side = own.call(above ? mod.singleton_class.ancestors.take_while { |a| a != above.singleton_class } : [])
      keys = instance_side.flat_map { |a| a.public_instance_methods(false) }.uniq.map { |m| "##{m}" } +
        (mod.singleton_methods(false) + class_side.flat_map { |a| a.public_instance_methods(false) }).uniq.map { |m| "::#{m}" }
      keys << "::new" if mod.is_a?(Class) && instance_side.any? { |a| a.private_instance_methods(false).include?(:initialize) }
      keys.each do |key|
        doc = method_doc(mod.name, key) || singleton_as_instance_doc(mod, key)
        body = doc && text(doc.comment)
        if body.nil? || body.empty?
          missing << "#{mod.name}#{key.sub("::", ".")}"
        elsif mod != LittleGhost::Sandbox::Declaration && !body.match?(/^ {2,}\S/) # an indented (verbatim) example
          without_example << "#{mod.name}#{key.sub("::", ".")}"
        end
      end
    end
    expect(missing).to be_empty, "methods without RDoc: #{missing.join(", ")}"
    expect(without_example).to be_empty, "methods without an example: #{without_example.join(", ")}"
  end

  it "builds a browsable HTML site with README.md as its main page" do
    Dir.mktmpdir("lg-html") do |html|
      spec = Gem::Specification.load(File.join(root, "littleghost-sandbox.gemspec"))
      args = spec.rdoc_options + spec.source_paths + spec.extra_rdoc_files
      site = File.join(html, "site")
      out, status = Open3.capture2e(*rdoc_command, "--quiet", "--output", site, *args, chdir: root)
      expect(status).to be_success, out
      expect(File.read(File.join(site, "index.html"))).to include("littleghost-sandbox")
      page = File.read(File.join(site, "LittleGhost", "Sandbox.html"))
      expect(page).to include('id="method-i-read"', "read(path, context: nil)")
    end
  end

  it "never defines or overrides anything when a documentation file is loaded" do
    files = Dir[File.join(root, "lib", "littleghost", "sandbox", "documentation", "*.rb")]
    expect(files).not_to be_empty
    script = <<~RUBY
      require "littleghost/sandbox"
      snapshot = -> { ObjectSpace.each_object(Module).select { |m| m.name&.start_with?("LittleGhost") }
        .to_h { |m| [m.name, [m.instance_methods(false).map { |n| m.instance_method(n).source_location }, m.singleton_methods(false).sort]] } }
      before = snapshot.call
      ARGV.each { |file| load file }
      exit(before == snapshot.call ? 0 : 1)
    RUBY
    out, status = Open3.capture2e(RbConfig.ruby, "-I", File.join(root, "lib"), "-e", script, *files)
    expect(status).to be_success, out
  end
end
