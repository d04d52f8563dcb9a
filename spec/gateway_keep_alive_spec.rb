# frozen_string_literal: true

require "spec_helper"
require "socket"

# The gateway's HTTP/1.1 engine with a real client (curl inside Bubblewrap, through the relay): a connection is kept
# for the next request, and request bodies of any size and framing reach the destination whole. The destination is
# a keep-alive HTTP/1.1 server this spec starts on the host's loopback (hence allow_private_destinations).
RSpec.describe "Gateway keep-alive and request bodies" do # rubocop:disable RSpec/DescribeClass
  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before do
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
  end

  after { @server&.close }

  # Answers each request on a connection with "METHOD PATH body=N" (N the decoded body's size), Content-Length framed.
  class KeepAliveServer
    attr_reader :port, :connections, :requests

    def initialize
      @server = TCPServer.new("127.0.0.1", 0)
      @port = @server.addr[1]
      @connections = 0
      @requests = Queue.new
      @thread = Thread.new do
        loop do
          client = @server.accept
          @connections += 1
          Thread.new(client) { |c| serve(c) }
        end
      end
    end

    def close
      @thread.kill
      @server.close
    end

    private

    def serve(client)
      loop do
        request_line = client.gets or break
        headers = {}
        while (line = client.gets) && line != "\r\n"
          name, value = line.split(":", 2)
          headers[name.downcase] = value.strip
        end
        body = read_body(client, headers)
        method, path = request_line.split
        @requests << [method, path, body]
        text = "#{method} #{path} body=#{body.bytesize}"
        client.write("HTTP/1.1 200 OK\r\nContent-Length: #{text.bytesize}\r\n\r\n#{text}")
      end
    rescue IOError, SystemCallError
      nil
    ensure
      client.close
    end

    def read_body(client, headers)
      return client.read(headers["content-length"].to_i) unless headers["transfer-encoding"]

      body = +""
      while (size = client.gets.to_i(16)).positive?
        body << client.read(size)
        client.read(2)
      end
      while (line = client.gets) && line != "\r\n"; end
      body
    end
  end

  def sandbox
    @sandbox ||= LittleGhost::Sandboxes::Bubblewrap.new(
      workspace: open_workspace,
      policy: {network: {mode: :allowlist, allow: ["localhost:#{@server.port}"],
                         gateway: {provider: :builtin, allow_private_destinations: true}}}
    )
  end

  def run(script)
    sandbox.execute_program(["/bin/sh", "-c", script], timeout: 60,
                                                      environment: {"NO_PROXY" => "", "no_proxy" => ""})
  end

  it "keeps a client's connection for its next request to the same destination" do
    @server = KeepAliveServer.new
    url = "http://localhost:#{@server.port}"
    result = run("/usr/bin/curl -sS --max-time 20 #{url}/one #{url}/two")
    expect([result.exit_code, result.stdout]).to eq([0, "GET /one body=0GET /two body=0"])
    expect(@server.connections).to eq(1)
  ensure
    @sandbox&.close
  end

  it "forwards a request body of a megabyte whole, with Content-Length and chunked" do
    @server = KeepAliveServer.new
    url = "http://localhost:#{@server.port}/upload"
    result = run("head -c 1048576 /dev/zero | /usr/bin/curl -sS --max-time 20 --data-binary @- #{url} && " \
                 "head -c 300000 /dev/zero | /usr/bin/curl -sS --max-time 20 -H 'Transfer-Encoding: chunked' " \
                 "--data-binary @- #{url}")
    expect([result.exit_code, result.stderr]).to eq([0, ""])
    expect(result.stdout).to eq("POST /upload body=1048576POST /upload body=300000")
    received = Array.new(2) { @server.requests.pop }
    expect(received.map { |_, _, body| body.bytesize }).to eq([1_048_576, 300_000])
    expect(sandbox.gateway.denials).to be_empty
  ensure
    @sandbox&.close
  end
end
