# frozen_string_literal: true

require "spec_helper"

# A request the gateway refuses (outside its destination's methods/paths, carrying a
# secret's stand-in where the secret may not go, needing inspection, or naming another host than its tunnel) is a
# Denial of operation :request that names the request's method and path, so a caller never parses the message.
# A refused connection has neither. The gateway's denial records are built here through the development build's
# test hook, exactly as the gateway hands them to the sandbox, since the request engine that makes them is
# another change; its own specs run the refusals with real clients.
RSpec.describe "A refused request's denial" do # rubocop:disable RSpec/DescribeClass
  let(:hooks) { LittleGhost::Sandbox::TestHooks if defined?(LittleGhost::Sandbox::TestHooks) }

  before { skip "the test hooks exist only in the development build (rake compile)" unless hooks }

  def denial(reason, request = nil, destination: "api.example.com:443")
    hooks.gateway_denial(destination, reason.to_s, request)
  end

  %i[request_not_allowed secret_exfiltration inspection_required host_mismatch malformed_request secret_placement].each do |reason|
    it "shows the reason #{reason} as a network denial with its own message" do
      refused = denial(reason, %w[POST /repos/org/x])
      expect([refused.kind, refused.operation, refused.target, refused.reason])
        .to eq([:network, :request, "api.example.com:443", reason])
      expect(refused.message).to be_frozen.and match(/\S/)
      expect(refused.message).not_to eq(denial(:not_allowed).message)
    end
  end

  it "names the refused request's method and path, without shadowing Object#method" do
    refused = denial(:request_not_allowed, %w[DELETE /repos/org/x?force=1])
    expect([refused.http_method, refused.path]).to eq(%w[DELETE /repos/org/x?force=1])
    expect(refused.http_method).to be_frozen
    expect(refused.path).to be_frozen
    expect(refused.method(:path)).to be_a(Method)
    expect(refused.to_h.except(:time, :message))
      .to eq(kind: :network, operation: :request, target: "api.example.com:443", reason: :request_not_allowed,
             method: "DELETE", path: "/repos/org/x?force=1")
    expect(refused.inspect).to eq(
      '#<LittleGhost::Sandbox::Denial network request "api.example.com:443" request_not_allowed DELETE "/repos/org/x?force=1">'
    )
  end

  it "a refused connection has no request, and its Hash no request keys" do
    refused = denial(:not_allowed)
    expect([refused.operation, refused.http_method, refused.path]).to eq([:connect, nil, nil])
    expect(refused.to_h.keys).to eq(%i[kind operation target reason message time])
    expect(refused.inspect).to eq('#<LittleGhost::Sandbox::Denial network connect "api.example.com:443" not_allowed>')
  end

  it "compares and hashes the request with the other fields" do
    get = denial(:request_not_allowed, %w[GET /a])
    post = denial(:request_not_allowed, %w[POST /a])
    other_path = denial(:request_not_allowed, %w[GET /b])
    same = denial(:request_not_allowed, %w[GET /a]) # the hook's denials all have the same time
    expect(same).to eq(get)
    expect(same.hash).to eq(get.hash)
    expect([post, other_path]).to all(satisfy { |d| d != get })
    expect([post.hash, other_path.hash]).not_to include(get.hash)
  end
end
