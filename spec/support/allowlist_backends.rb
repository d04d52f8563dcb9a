# frozen_string_literal: true

# The backends that enforce `network: {allow: [...]}` through the built-in gateway: Bubblewrap (the relay in the
# sandbox's network namespace) and Landlock (the supervisor makes the child's connections; docs/security.md,
# "Allowlists under Landlock"). A network spec runs its examples under each with
#
#   extend AllowlistBackends
#   each_allowlist_backend do |name|
#     it "..." do backend.new(...) end
#   end
#
# `backend` is the class; an example is skipped (naming why) where its backend cannot enforce an allowlist here.
module AllowlistBackends
  BACKENDS = {
    bubblewrap: "LittleGhost::Sandboxes::Bubblewrap",
    landlock: "LittleGhost::Sandboxes::Landlock"
  }.freeze

  # Why `name` cannot enforce an allowlist on this host, or nil.
  def self.unavailable(name)
    return "#{name} is not built here" unless Object.const_defined?(BACKENDS.fetch(name))

    probe = Object.const_get(BACKENDS.fetch(name)).probe
    return "#{name} is unavailable here: #{probe[:reason]}" unless probe[:available]

    # Only the kernel's own answer skips: a backend that merely claims less fails the examples.
    probe[:allowlist_unavailable] && "#{name} cannot enforce :allowlist here: #{probe[:allowlist_unavailable]}"
  end

  def each_allowlist_backend(&examples)
    BACKENDS.each do |name, class_name|
      context "under #{name}" do
        let(:backend) { Object.const_get(class_name) }
        let(:backend_name) { name }

        before do
          reason = AllowlistBackends.unavailable(name)
          skip reason if reason
        end

        class_exec(name, &examples)
      end
    end
  end
end
