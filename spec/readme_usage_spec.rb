# frozen_string_literal: true

require "open3"
require "rbconfig"

# The README's "Using it" sample is what a new user pastes into a file first: it must run end to end, and every
# `# => value` it shows must be what Ruby really returns. The sample uses `provider: :native` (Bubblewrap here).
RSpec.describe "README usage sample" do
  root = File.expand_path("..", __dir__)

  def usage_block(readme)
    section = readme[/^## Using it\n(.*?)^## /m, 1] or raise "README.md has no 'Using it' section"
    section[/^```ruby\n(.*?)^```$/m, 1] or raise "the 'Using it' section has no ```ruby block"
  end

  # Each `EXPR # => VALUE` line becomes a check that EXPR == VALUE (a trailing "(...)" remark is ignored).
  def with_checks(code)
    checks = 0
    lines = code.lines.each_with_index.map do |line, index|
      expression, expected = line.chomp.split(/\s+# => /, 2)
      next line unless expected

      checks += 1
      expected = expected.sub(/\s+\([^"]*\)\z/, "")
      "__check(#{index + 1}, (#{expression}), (#{expected}))\n"
    end
    prelude = <<~RUBY
      def __check(line, actual, expected)
        return if actual == expected

        abort "README usage line \#{line}: got \#{actual.inspect}, the README says \#{expected.inspect}"
      end
    RUBY
    [prelude + lines.join, checks]
  end

  it "runs end to end when pasted into a file, and every commented result is true" do
    code = usage_block(File.read(File.join(root, "README.md")))
    expect(code).to include("provider: :native")
    checked, checks = with_checks(code)
    expect(checks).to be >= 8

    Dir.mktmpdir("lg-readme") do |tmp|
      env = { "TMPDIR" => tmp } # the sample's Dir.mktmpdir lands here and is removed with it
      [["pasted.rb", code], ["checked.rb", checked]].each do |name, source|
        file = File.join(tmp, name)
        File.write(file, source)
        out, status = Open3.capture2e(env, RbConfig.ruby, "-I", File.join(root, "lib"), file, chdir: tmp)
        expect(status).to be_success, "#{name} failed:\n#{out}"
      end
    end
  end
end
