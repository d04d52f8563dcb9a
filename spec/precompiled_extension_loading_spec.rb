# frozen_string_literal: true

require "open3"
require "rbconfig"

# `require "littleghost/sandbox"` loads the platform gem's copy compiled for the running Ruby's minor
# (lib/littleghost_sandbox/MINOR/), and refuses with the way out when the gem holds no copy for this Ruby: an
# extension compiled against another minor's C ABI is never loaded.
RSpec.describe "loading a precompiled extension" do # rubocop:disable RSpec/DescribeClass
  root = File.expand_path("..", __dir__)
  dlext = RbConfig::CONFIG["DLEXT"]
  minor = RUBY_VERSION[/\A\d+\.\d+/]
  script = 'require "littleghost/sandbox"; print $LOADED_FEATURES.grep(/littleghost_sandbox\.' + dlext + '\z/).join(",")'

  # A copy of lib/ with the extension and helper only under lib/littleghost_sandbox/`under`/.
  def precompiled_lib(root, tmp, under, dlext)
    lib = File.join(tmp, "lib")
    FileUtils.cp_r(File.join(root, "lib"), lib)
    FileUtils.rm_f(Dir[File.join(lib, "littleghost_sandbox.#{dlext}"), File.join(lib, "littleghost-sandbox-helper")])
    directory = File.join(lib, "littleghost_sandbox", under)
    FileUtils.mkdir_p(directory)
    FileUtils.cp(File.join(root, "lib", "littleghost_sandbox.#{dlext}"), directory)
    FileUtils.cp(File.join(root, "lib", "littleghost-sandbox-helper"), directory)
    lib
  end

  it "loads the copy for this Ruby's minor" do
    Dir.mktmpdir("lg-minor") do |tmp|
      lib = precompiled_lib(root, tmp, minor, dlext)
      out, status = Open3.capture2e(RbConfig.ruby, "-I", lib, "-e", script, chdir: tmp)
      expect(status).to be_success, out
      expect(out).to eq(File.join(lib, "littleghost_sandbox", minor, "littleghost_sandbox.#{dlext}"))
    end
  end

  it "refuses a gem precompiled only for another Ruby, naming the source gem" do
    Dir.mktmpdir("lg-minor") do |tmp|
      lib = precompiled_lib(root, tmp, "2.7", dlext)
      out, status = Open3.capture2e(RbConfig.ruby, "-I", lib, "-e", script, chdir: tmp)
      expect(status).not_to be_success
      expect(out).to include("precompiled for Ruby 2.7 only, not #{RUBY_VERSION}", "--platform ruby")
    end
  end
end
