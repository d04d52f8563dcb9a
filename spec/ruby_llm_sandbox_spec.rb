# frozen_string_literal: true

require "open3"
require "rbconfig"
require "littleghost/sandbox/ruby_llm"

# RubyLLM's `config.sandbox` contract, kept by this gem's enforcement: `run(*command, timeout:, readable:,
# writable:, denied:, network:, directory:, env:)` returns what the command did, and the command reaches only what
# the call names. Each example is what a model's code would try.
RSpec.describe LittleGhost::RubyLLMSandbox do
  include LoopbackHttpHelpers
  include ProcessHelpers

  let(:host) { Dir.mktmpdir("lg-rubyllm-host") }
  let(:readable) { File.join(host, "readable").tap { |dir| Dir.mkdir(dir) } }
  let(:writable) { File.join(host, "writable").tap { |dir| Dir.mkdir(dir) } }
  let(:elsewhere) { File.join(host, "elsewhere").tap { |dir| Dir.mkdir(dir) } }

  after { FileUtils.remove_entry(host, true) }

  # Processes running `sleep 30`, wherever they are.
  def sleepers
    Dir["/proc/[0-9]*/cmdline"].count do |path|
      File.read(path) == "sleep\u000030\u0000"
    rescue SystemCallError
      false
    end
  end

  shared_examples "the RubyLLM contract" do |provider|
    subject(:sandbox) { described_class.new(provider: provider) }

    before { skip "#{provider} is unavailable: #{sandbox.reason}" unless sandbox.supported? }

    it "runs a String through the shell and an argument vector without one" do
      expect(sandbox.run("echo $((6 * 7)); echo two", timeout: 10).stdout).to eq("42\ntwo\n")
      literal = sandbox.run("echo", "$((6 * 7)); touch pwned", timeout: 10)
      expect(literal.stdout).to eq("$((6 * 7)); touch pwned\n")
      expect(sandbox.run(%w[sh -c exit\ 3], timeout: 10).exit_code).to eq(3)
    end

    it "reads a readable path, cannot write it, and writes a writable path on the host" do
      File.write(File.join(readable, "in.txt"), "input")
      result = sandbox.run("cat #{readable}/in.txt; echo changed > #{readable}/in.txt; echo out > #{writable}/o.txt",
                           timeout: 10, readable: [readable], writable: [writable])
      expect(result.stdout).to eq("input")
      expect(File.read(File.join(readable, "in.txt"))).to eq("input")
      expect(File.read(File.join(writable, "o.txt"))).to eq("out\n")
    end

    it "shows nothing of the host outside the paths it names" do
      File.write(File.join(elsewhere, "private.txt"), "private")
      result = sandbox.run("cat #{elsewhere}/private.txt; ls #{elsewhere}; echo x > #{elsewhere}/new",
                           timeout: 10, readable: [readable])
      expect(result.stdout).to eq("")
      expect(Dir.children(elsewhere)).to eq(["private.txt"])
    end

    it "works in the directory asked for and refuses one outside every path" do
      Dir.mkdir(File.join(writable, "sub"))
      result = sandbox.run("pwd; echo here > made", timeout: 10, writable: [writable], directory: "#{writable}/sub")
      expect(result.stdout).to eq("#{writable}/sub\n")
      expect(File.read(File.join(writable, "sub", "made"))).to eq("here\n")
      expect { sandbox.run("pwd", timeout: 10, readable: [readable], directory: elsewhere) }
        .to raise_error(ArgumentError, /directory is outside every readable and writable path/)
    end

    it "gives env as the whole environment plus PATH, and a caller's PATH wins" do
      ENV["LG_RUBYLLM_HOST_ONLY"] = "host value"
      result = sandbox.run("env", timeout: 10, env: { "TOKEN" => "given" })
      environment = result.stdout.lines.to_h { |line| line.chomp.split("=", 2) }
      expect(environment).to include("TOKEN" => "given", "PATH" => described_class::DEFAULT_PATH)
      expect(environment).not_to have_key("LG_RUBYLLM_HOST_ONLY")
      expect(sandbox.run("echo $PATH", timeout: 10, env: { PATH: "/bin" }).stdout).to eq("/bin\n")
    ensure
      ENV.delete("LG_RUBYLLM_HOST_ONLY")
    end

    it "reports a timeout as a result with what was printed before it, and leaves nothing running" do
      result = sandbox.run("echo started; sleep 30 & sleep 30", timeout: 0.5)
      expect([result.timed_out?, result.exit_code, result.stdout]).to eq([true, 124, "started\n"])
      expect(result.success?).to be(false)
      expect(sleepers).to eq(0)
    end

    it "has no network by default and the host's with network: true" do
      port = start_server
      fetch = "curl -sS --max-time 5 http://127.0.0.1:#{port}/"
      expect(sandbox.run(fetch, timeout: 20).stdout).to eq("")
      expect(sandbox.run(fetch, timeout: 20, network: true).stdout).to eq("served by #{port}")
    end

    it "refuses bad arguments with ArgumentError" do
      expect { sandbox.run(timeout: 1) }.to raise_error(ArgumentError, /command must not be empty/)
      expect { sandbox.run("true", timeout: 1, readable: ["#{host}/missing"]) }
        .to raise_error(ArgumentError, /readable path does not exist/)
      expect { sandbox.run("true", timeout: 1, network: "yes") }.to raise_error(ArgumentError, /network must be/)
      expect { sandbox.run("true", timeout: 1, network: { deny: [] }) }.to raise_error(ArgumentError, /allow:/)
      expect { sandbox.run("true", 1, timeout: 1) }.to raise_error(ArgumentError, /must be Strings/)
    end

    it "reports a memory limit's kill as a failed result" do
      limited = described_class.new(provider: provider, process_limits: { memory_bytes: 64 << 20 })
      result = limited.run("python3", "-c", "x = bytearray(256 << 20); print('allocated')", timeout: 30)
      expect(result.stdout).not_to include("allocated")
      expect(result.exit_code).not_to eq(0)
      expect(result.timed_out?).to be(false)
    rescue LittleGhost::CapabilityError => e
      skip "no memory limit here: #{e.message}"
    end
  end

  context "on Bubblewrap" do
    include_examples "the RubyLLM contract", :bubblewrap

    it "hides a denied path even inside a readable one" do
      Dir.mkdir(File.join(readable, "keys"))
      File.write(File.join(readable, "keys", "id"), "secret key")
      File.write(File.join(readable, "notes"), "notes")
      result = sandbox.run("cat #{readable}/notes; cat #{readable}/keys/id; ls #{readable}/keys", timeout: 10,
                                                                                                 readable: [readable], denied: ["#{readable}/keys"])
      expect(result.stdout).to eq("notes")
      expect(result.stdout).not_to include("secret key")
    end

    it "allows only the listed hosts and names each refused host:port in blocked" do
      port = start_server
      allowed = described_class.new(provider: :bubblewrap, allow_private_destinations: true)
      result = allowed.run("curl -sS --noproxy '' --max-time 5 http://localhost:#{port}/; " \
                           "curl -sS --noproxy '' --max-time 5 http://example.com/", timeout: 30,
                                                                                     network: { allow: ["localhost:#{port}"] })
      expect(result.stdout).to include("served by #{port}")
      expect(result.blocked).to eq(["example.com:80"])
    end

    it "expands a bare host to its HTTPS and HTTP ports" do
      result = sandbox.run("curl -sS --max-time 5 http://pypi.org:81/", timeout: 30,
                                                                        network: { allow: ["pypi.org"] })
      expect(result.blocked).to eq(["pypi.org:81"])
    end

    it "runs the same as uid 65534" do
      prefix = drop_to_nobody!
      lib = File.expand_path("../lib", __dir__)
      script = <<~RUBY
        require "littleghost/sandbox/ruby_llm"
        s = LittleGhost::RubyLLMSandbox.new(provider: :bubblewrap)
        r = s.run("id -u; cat /etc/shadow", timeout: 10)
        print r.stdout, r.exit_code
      RUBY
      out, status = Open3.capture2e(*prefix, RbConfig.ruby, "-I", lib, "-e", script, chdir: "/")
      expect(status).to be_success, out
      expect(out).to start_with("65534\n").and end_with("1")
    end
  end

  context "on Landlock" do
    include_examples "the RubyLLM contract", :landlock

    it "raises CapabilityError for a denied path inside a readable one instead of showing it" do
      Dir.mkdir(File.join(readable, "keys"))
      expect { sandbox.run("true", timeout: 10, readable: [readable], denied: ["#{readable}/keys"]) }
        .to raise_error(LittleGhost::CapabilityError, /cannot hide .*keys inside a readable or writable path/)
    end

    it "needs no mask for a denied path outside every path" do
      expect(sandbox.run("echo ok", timeout: 10, readable: [readable], denied: [elsewhere]).stdout).to eq("ok\n")
    end
  end

  it "says why it is unsupported and how to fix it" do
    missing = described_class.new(provider: :seatbelt)
    skip "Seatbelt runs here" if missing.supported?
    expect(missing.supported?).to be(false)
    expect(missing.reason).to be_a(String).and(match(/macOS|Seatbelt/i))
  end
end
