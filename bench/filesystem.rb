# frozen_string_literal: true

# Filesystem broker cost vs plain Ruby I/O (run: `rake compile && ruby -Ilib bench/filesystem.rb`).
require "littleghost/sandbox"
require "tmpdir"
require "fileutils"
require_relative "support"

Dir.mktmpdir("lg-bench-fs") do |dir|
  workspace = LittleGhost::Workspace.new(root: dir)
  workspace.open
  sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}}).open

  deep = File.join(dir, "a", "b", "c")
  FileUtils.mkdir_p(deep)
  File.write(File.join(deep, "file.txt"), "x" * 4096)
  listing = File.join(dir, "many")
  FileUtils.mkdir_p(listing)
  1000.times { |i| File.write(File.join(listing, "entry-#{i}.txt"), "") }
  content = "y" * 4096

  puts "littleghost-sandbox filesystem benchmark (median per operation, #{RUBY_DESCRIPTION})"
  BenchSupport.compare("read 4 KiB, 3 dirs deep: sandbox.read vs File.read", iterations: 2000, target: 2.0,
    ours: -> { sandbox.read("a/b/c/file.txt") },
    baseline: -> { File.read(File.join(deep, "file.txt")) })
  BenchSupport.compare("list 1,000 entries: sandbox.list vs Dir.children", iterations: 50, target: 2.0,
    ours: -> { sandbox.list("many") },
    baseline: -> { Dir.children(listing) })
  BenchSupport.compare("write 4 KiB: sandbox.write vs File.write", iterations: 1000, target: 2.0,
    ours: -> { sandbox.write("a/b/c/out.txt", content) },
    baseline: -> { File.write(File.join(deep, "base.txt"), content) })
  sandbox.close
  workspace.close
end

# The same operations when the root grant holds a read-only and a runtime-only
# grant: every directory on the way is then judged by its identity (H.1).
Dir.mktmpdir("lg-bench-fs-nested") do |dir|
  workspace = LittleGhost::Workspace.new(root: dir, paths: {source: "src/lib", home: "cfg/home"})
  workspace.open
  policy = {files: {root: :read_write, source: :read_only}, runtime_paths: {home: :read_write}}
  sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy).open

  deep = File.join(dir, "a", "b", "c")
  FileUtils.mkdir_p(deep)
  File.write(File.join(deep, "file.txt"), "x" * 4096)
  content = "y" * 4096

  BenchSupport.compare("nested grants: read 4 KiB, 3 dirs deep vs File.read", iterations: 2000, target: 2.0,
    ours: -> { sandbox.read("a/b/c/file.txt") },
    baseline: -> { File.read(File.join(deep, "file.txt")) })
  BenchSupport.compare("nested grants: write 4 KiB vs File.write", iterations: 1000, target: 2.0,
    ours: -> { sandbox.write("a/b/c/out.txt", content) },
    baseline: -> { File.write(File.join(deep, "base.txt"), content) })
  sandbox.close
  workspace.close
end
