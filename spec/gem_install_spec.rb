# frozen_string_literal: true

require "open3"
require "rbconfig"

# Proves the packaging path a user takes: `gem build`, `gem install --local` into an
# empty GEM_HOME (which compiles the Rust extension through extconf.rb), then
# `require "littleghost/sandbox"` from an unrelated directory.
RSpec.describe "gem packaging" do
  root = File.expand_path("..", __dir__)

  it "builds, installs into a fresh GEM_HOME and loads from any directory" do
    Dir.mktmpdir("lg-gem") do |tmp|
      gem_home = File.join(tmp, "home")
      out, status = Open3.capture2e("gem", "build", "littleghost-sandbox.gemspec", "--output", File.join(tmp, "lg.gem"), chdir: root)
      expect(status).to be_success, out

      env = {
        "GEM_HOME" => gem_home, "GEM_PATH" => gem_home,
        # Reuse compiled dependencies; the gem's own crates still compile from the gem's copy.
        "CARGO_TARGET_DIR" => File.join(root, "target", "gem-install")
      }
      out, status = Open3.capture2e(env, "gem", "install", "--local", "--no-document", File.join(tmp, "lg.gem"), chdir: tmp)
      expect(status).to be_success, out

      script = 'require "littleghost/sandbox"; print LittleGhost::Sandbox.resolve_provider(:unrestricted)'
      out, status = Open3.capture2e(env, RbConfig.ruby, "-e", script, chdir: tmp)
      expect(status).to be_success, out
      expect(out).to eq("LittleGhost::Sandboxes::Unrestricted")
      expect(Dir[File.join(gem_home, "**", "littleghost_sandbox.so")]).not_to be_empty
    end
  end
end
