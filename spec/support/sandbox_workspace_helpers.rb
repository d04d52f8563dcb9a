# frozen_string_literal: true

# Temporary workspaces for the Sandbox, Scope, Unrestricted and escape specs.
# Each example gets fresh directories that are removed afterwards.
module SandboxWorkspaceHelpers
  # A temporary directory removed after the example; realpath'd so expectations can compare sources.
  def temporary_directory
    directory = File.realpath(Dir.mktmpdir("lg-sandbox-spec"))
    (@temporary_directories ||= []) << directory
    directory
  end

  # An opened Workspace rooted in a fresh directory.
  def open_workspace(paths: {}, root: temporary_directory)
    workspace = LittleGhost::Workspace.new(root: root, paths: paths)
    (@opened_workspaces ||= []) << workspace
    workspace.open
  end

  # Every file beneath `directory` with its content (bytes), for "nothing changed" assertions.
  def snapshot(directory)
    Dir.glob("**/*", File::FNM_DOTMATCH, base: directory).sort.each_with_object({}) do |relative, files|
      next if relative.end_with?("/.") || relative == "."

      path = File.join(directory, relative)
      stat = File.lstat(path)
      files[relative] = if stat.symlink? then [:link, File.readlink(path)]
                        elsif stat.file? then [:file, File.binread(path), stat.mode]
                        else [stat.ftype.to_sym]
                        end
    end
  end

  # Closes the workspaces and removes the directories this example created.
  def clean_up_sandbox_workspaces
    Array(@opened_workspaces).each { |workspace| workspace.close rescue nil } # rubocop:disable Style/RescueModifier
    Array(@temporary_directories).each { |directory| FileUtils.rm_rf(directory) }
  end
end

RSpec.configure do |config|
  config.include SandboxWorkspaceHelpers
  config.after { clean_up_sandbox_workspaces }
end
