# frozen_string_literal: true

# The demonstration behind `bin/demo`: a real sandbox writes and reads inside its
# grants, runs a real command, and refuses real escapes with their messages.
require "littleghost/sandbox"
require "tmpdir"
require "socket"

def show(title)
  result = yield
  puts "  ok      #{title}: #{result.inspect}"
rescue LittleGhost::Error => e
  puts "  refused #{title}: #{e.class.name.split("::").last}: #{e.message}"
end

Dir.mktmpdir("littleghost-demo") do |dir|
  workspace = LittleGhost::Workspace.new(root: dir, paths: {source: "source", home: "home"})
  workspace.open
  File.write(File.join(dir, "source", "app.rb"), "puts 'hello'\n")
  File.symlink("/etc", File.join(dir, "etc-link"))

  probe = LittleGhost::Sandbox.probe(:native)
  provider = probe[:available] ? :native : :unrestricted
  puts "Native sandbox available: #{probe[:available]}#{" (#{probe[:reason]})" unless probe[:available]}"
  LittleGhost.configure do |config|
    config.sandbox = {
      provider: provider,
      files: {root: :read_write, source: :read_only},
      runtime_paths: {home: :read_write},
      network: (provider == :native ? :none : :inherit)
    }
  end
  sandbox = LittleGhost::Sandbox.build(LittleGhost.configuration.sandbox, workspace: workspace).open
  puts "Sandbox: #{sandbox.class.name}, capabilities: #{sandbox.capabilities.features.join(", ")}"

  puts "\nBrokered files (workspace #{dir}):"
  show("write notes.md") { sandbox.write("notes.md", "Hello from the agent\n") }
  show("read notes.md") { sandbox.read("notes.md") }
  show("list .") { sandbox.list(".") }
  show("escape with ../") { sandbox.read("../../etc/passwd") }
  show("follow a symlink out") { sandbox.read("etc-link/passwd") }
  show("write through the read-only grant") { sandbox.write("source/app.rb", "system('rm -rf ~')") }

  puts "\nA real child process:"
  execution = sandbox.execute_program(["/bin/sh", "-c", "echo hello from uid $(id -u) in $(pwd); ls"], timeout: 10)
  puts "  exit #{execution.exit_code}: #{execution.stdout.strip.tr("\n", " ")}"

  if provider == :native
    puts "\nEscapes attempted by the child (Bubblewrap namespaces):"
    execution = sandbox.execute_program(["/bin/cat", "/etc/hostname"], timeout: 10)
    puts "  host read /etc/hostname -> exit #{execution.exit_code}: #{execution.stderr.strip}"
    server = TCPServer.new("127.0.0.1", 0)
    port = server.addr[1]
    execution = sandbox.execute_program(["/bin/bash", "-c", "echo hi > /dev/tcp/127.0.0.1/#{port}"], timeout: 10)
    puts "  connect to host 127.0.0.1:#{port} -> exit #{execution.exit_code}: #{execution.stderr.strip.lines.last}"
    server.close
  else
    puts "\n(The unrestricted backend does not isolate processes; install bubblewrap for the native demo.)"
  end
  sandbox.close
  workspace.close
end
