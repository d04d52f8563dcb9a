# frozen_string_literal: true

require "open3"
require "rbconfig"

# Every ```ruby sample in README.md and docs/*.md is what a new user pastes into a file: each must run on its own,
# and every `EXPRESSION # => VALUE` it shows must be what Ruby really returns.
RSpec.describe "code samples in the user's guide and docs" do
  root = File.expand_path("..", __dir__)
  documents = [File.join(root, "README.md"), *Dir[File.join(root, "docs", "*.md")].sort]
  samples = documents.flat_map do |document|
    text = File.read(document)
    text.enum_for(:scan, /^```ruby\n(.*?)^```$/m).map do
      line = text[0...Regexp.last_match.begin(0)].count("\n") + 2
      [File.basename(document), line, Regexp.last_match(1)]
    end
  end

  # Each `EXPR # => VALUE` line becomes a check that EXPR == VALUE (a trailing "(remark)" is ignored).
  def with_checks(code)
    checks = 0
    lines = code.lines.each_with_index.map do |line, index|
      expression, expected = line.chomp.split(/\s+# => /, 2)
      next line if expected.nil? || expression.strip.empty?

      checks += 1
      expected = expected.sub(/\s+\([^"]*\)\z/, "") # a trailing "(remark)" is prose, not Ruby
      indent = line[/\A\s*/]
      "#{indent}__check(#{index + 1}, (#{expression.strip}), (#{expected}))\n"
    end
    prelude = <<~RUBY
      require "littleghost/sandbox"
      require "tmpdir"
      def __check(line, actual, expected)
        return if actual == expected

        abort "sample line \#{line}: got \#{actual.inspect}, the text says \#{expected.inspect}"
      end
    RUBY
    [prelude + lines.join, checks]
  end

  it "finds the samples: the quick start and one per guide section that has code" do
    expect(samples.map(&:first)).to include("README.md")
    expect(samples.count { |document, _, _| document == "README.md" }).to be >= 8
    expect(samples.first.last).to include("provider: :native")
  end

  samples.each do |document, line, code|
    it "runs the sample at #{document}:#{line} and every result it shows is true" do
      checked, = with_checks(code)
      Dir.mktmpdir("lg-sample") do |tmp|
        env = {"TMPDIR" => tmp} # the sample's Dir.mktmpdir lands here and is removed with it
        file = File.join(tmp, "sample.rb")
        File.write(file, checked)
        out, status = Open3.capture2e(env, RbConfig.ruby, "-I", File.join(root, "lib"), file, chdir: tmp)
        expect(status).to be_success, "#{document}:#{line} failed:\n#{out}"
      end
    end
  end
end
