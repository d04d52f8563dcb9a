# frozen_string_literal: true

# The Ruby a spec runs as a program *inside* a sandbox: the system's, under /usr, which every backend shows as a
# runtime root (docs/spec.md §B.1, and Landlock's system paths). The Ruby running the suite may live elsewhere (one
# built under /opt), and a sandbox rightly shows nothing of the host outside its grants, so RbConfig.ruby is for
# programs the host runs, this one for programs the sandbox runs.
SANDBOXED_RUBY = "/usr/bin/ruby"
