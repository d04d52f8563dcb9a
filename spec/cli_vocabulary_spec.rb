# frozen_string_literal: true

require "json"
require "open3"
require "rbconfig"

# The CLI speaks the vocabulary bwrap, srt and `codex sandbox` users expect: sizes with suffixes, durations,
# --tasks, --cpu-seconds, --allow, unnamed --ro/--rw PATH, and exit statuses like `env`/`timeout`/`docker run`
# (127 not found and 126 not executable on every backend, 125 for its own setup failures).
RSpec.describe "littleghost-sandbox command vocabulary" do
  root = File.expand_path("..", __dir__)
  executable = File.join(root, "exe", "littleghost-sandbox")
  lib = File.join(root, "lib")
  bubblewrap = LittleGhost::Sandbox.probe(:bubblewrap)[:available]

  define_method(:cli) do |*args, chdir:|
    Open3.capture3(RbConfig.ruby, "-I", lib, executable, *args, stdin_data: "", chdir: chdir)
  end

  let(:work) { temporary_directory }

  it "reads sizes with K/M/G suffixes and durations with ms/s/m, and refuses nonsense with usage status 2" do
    out, err, status = cli("run", "--memory", "256M", "--output-bytes", "64K", "--timeout", "1.5s", "--",
                           "sh", "-c", "echo fine", chdir: work)
    expect([out, err, status.exitstatus]).to eq(["fine\n", "", 0])
    _, err, status = cli("run", "--memory", "lots", "--", "true", chdir: work)
    expect([status.exitstatus, err]).to match([125, /--memory needs a size such as 4096, 64K or 500M, got "lots"/])
    _, err, status = cli("run", "--timeout", "0s", "--", "true", chdir: work)
    expect([status.exitstatus, err]).to match([125, /--timeout must be positive/])
  end

  it "times out after a duration given with a suffix, exiting 124" do
    _, err, status = cli("run", "--timeout", "300ms", "--", "sleep", "20", chdir: work)
    expect(status.exitstatus).to eq(124)
    expect(err).to include("timed out")
  end

  [[:unrestricted, true], [:bubblewrap, bubblewrap]].each do |provider, available|
    it "exits 127 for a missing program and 126 for a file it cannot execute under #{provider}", if: available do
      _, err, status = cli("run", "--provider", provider.to_s, "--", "no-such-program-here", chdir: work)
      expect([status.exitstatus, err]).to eq([127, "littleghost-sandbox: no-such-program-here: command not found\n"])
      File.write(File.join(work, "script"), "echo never\n") # not executable
      _, err, status = cli("run", "--provider", provider.to_s, "--", "./script", chdir: work)
      expect([status.exitstatus, err]).to eq([126, "littleghost-sandbox: ./script: permission denied\n"])
    end
  end

  it "maps Bubblewrap's own execvp failure for a program only the sandbox hides to 127", if: bubblewrap do
    hidden = temporary_directory # outside the workspace: not mounted inside the sandbox
    File.write(File.join(hidden, "prog"), "#!/bin/sh\necho ran\n")
    File.chmod(0o755, File.join(hidden, "prog"))
    out, err, status = cli("run", "--provider", "bubblewrap", "--env", "PATH=/usr/bin:/bin",
                           "--", File.join(hidden, "prog"), chdir: work)
    expect(out).to eq("")
    expect([status.exitstatus, err]).to eq([127, "littleghost-sandbox: #{File.join(hidden, 'prog')}: command not found\n"])
  end

  it "grants --rw PATH under the name of its last component", if: bubblewrap do
    out_dir = File.join(temporary_directory, "build-out")
    Dir.mkdir(out_dir)
    out, _, status = cli("run", "--provider", "bubblewrap", "--rw", out_dir, "--",
                         "sh", "-c", 'echo made > "$LITTLE_GHOST_WORKSPACE_BUILD_OUT/file"', chdir: work)
    expect([out, status.exitstatus]).to eq(["", 0])
    expect(File.read(File.join(out_dir, "file"))).to eq("made\n")
    ro_dir = File.join(temporary_directory, "data")
    Dir.mkdir(ro_dir)
    _, _, status = cli("run", "--provider", "bubblewrap", "--ro", ro_dir, "--",
                       "sh", "-c", 'touch "$LITTLE_GHOST_WORKSPACE_DATA/x"', chdir: work)
    expect(status.exitstatus).not_to eq(0)
    expect(File.exist?(File.join(ro_dir, "x"))).to be(false)
  end

  it "stops a fork bomb at --tasks and kills a spinning program at --cpu-seconds",
     if: LittleGhost::Sandbox.probe(:unrestricted)[:limits]&.fetch(:tasks, nil) == true do
    _, _, status = cli("run", "--provider", "unrestricted", "--tasks", "4", "--",
                       "sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; wait", chdir: work)
    expect(status.exitstatus).not_to eq(0) # the shell could not fork past the limit
    _, err, status = cli("run", "--provider", "unrestricted", "--cpu-seconds", "1", "--",
                         "sh", "-c", "while :; do :; done", chdir: work)
    expect(status.exitstatus).to eq(137)
    expect(err).to include("CPU time exceeded 1 second")
  end

  it "reaches an --allow destination through the gateway and nothing else", if: bubblewrap do
    require "socket"
    server = TCPServer.new("127.0.0.1", 0)
    port = server.addr[1]
    thread = Thread.new do
      loop do
        client = server.accept
        while (line = client.gets) && line != "\r\n"; end
        client.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        client.close
      end
    rescue IOError
      nil
    end
    out, err, status = cli("run", "--provider", "bubblewrap", "--allow", "localhost:#{port}", "--allow-private",
                           "--", "curl", "-sS", "--max-time", "20", "http://localhost:#{port}/", chdir: work)
    expect([out, status.exitstatus]).to eq(["ok", 0]), err
    out, = cli("run", "--provider", "bubblewrap", "--allow", "localhost:#{port}", "--allow-private", "--",
               "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://localhost:#{port + 1}/", chdir: work)
    expect(out).to eq("403")
    _, err, status = cli("run", "--allow", "a.example:443", "--network", "none", "--", "true", chdir: work)
    expect([status.exitstatus, err]).to match([125, /--allow needs the allowlist/])
  ensure
    server&.close
    thread&.join
  end

  it "probes every backend, Landlock included, says what Native picks and which limits hold, in text and JSON" do
    out, _, status = cli("probe", chdir: work)
    expect(status.exitstatus).to eq(0)
    expect(out).to match(/^landlock: (available|unavailable)/)
    native = LittleGhost::Sandbox.probe(:native)
    expect(out).to include("native: available (picks #{native[:backend]})") if native[:available]
    report = JSON.parse(cli("probe", "--json", chdir: work).first)
    expect(report.keys).to eq(%w[native bubblewrap landlock seatbelt unrestricted])
    if native[:available]
      expect(report["native"]["backend"]).to eq(native[:backend].to_s)
      expect(report["native"]["limits"].keys).to include("memory_bytes", "tasks", "cpu_seconds")
    end
  end
end
