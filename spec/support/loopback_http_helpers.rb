# frozen_string_literal: true

require "socket"

# A loopback HTTP server for the network specs, and curl through the sandbox's proxy to reach it. Include the module
# in an example group; its `after` hook closes every server the examples started.
module LoopbackHttpHelpers
  def self.included(group)
    group.after { @servers&.each { |server, thread| server.close; thread.kill } }
  end

  # Starts a server on `address`:`port` (0: any free port) answering every request with `body` ("served by PORT"
  # unless given); returns the port.
  def start_server(address = "127.0.0.1", port = 0, body: nil)
    server = TCPServer.new(address, port)
    port = server.addr[1]
    body ||= "served by #{port}"
    thread = Thread.new do
      loop do
        client = server.accept
        Thread.new(client) do |c|
          while (line = c.gets) && line != "\r\n"; end
          c.write("HTTP/1.1 200 OK\r\nContent-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
          c.close
        rescue IOError, SystemCallError
          nil
        end
      end
    rescue IOError
      nil
    end
    (@servers ||= []) << [server, thread]
    port
  end

  # curl inside `sandbox`, through the gateway even for loopback addresses; stdout ends with " HTTP_CODE".
  def curl(sandbox, url, **options)
    sandbox.execute_program(["/usr/bin/curl", "-sS", "--max-time", "20", "-w", " %{http_code}", url],
                            timeout: 60, environment: { "NO_PROXY" => "", "no_proxy" => "" }, **options)
  end
end
