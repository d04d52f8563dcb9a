# frozen_string_literal: true

#--
# Documentation only: the LittleGhost error classes are defined by the Rust extension (reopened if the framework
# defined them first). This file defines nothing.
#++

# The LittleGhost namespace. This gem (<tt>require "littleghost/sandbox"</tt>) provides LittleGhost::Sandbox, its
# backends in LittleGhost::Sandboxes, LittleGhost::Workspace, the errors below, and LittleGhost.configure.
#
# Errors, all under LittleGhost::Error:
#
#   LittleGhost::Error < StandardError
#     ConfigurationError           invalid trusted configuration
#       SandboxConfigurationError  sandbox set-up problems found before any model work
#         UnsupportedPlatformError the backend cannot run on this OS
#         DependencyError          an unknown provider, or a missing or unusable dependency
#         CapabilityError          a control cannot be enforced; a scope tries to widen
#         PolicyError              an invalid policy, limits or declaration
#     AbstractMethodError          a base-class operation a backend did not implement
#     ToolError                    an expected per-operation failure; the message is safe to show a model
#       Sandbox::TimeoutError      a program ran past its timeout; #execution holds its output so far
#       Sandbox::LimitError        a memory or CPU limit ended a program; #execution holds its output so far
#     CancelledError               cancellation observed
#     DeadlineExceededError        a deadline observed
#     CleanupError                 a managed resource failed to close
#
#   begin
#     sandbox.read(path)
#   rescue LittleGhost::ToolError => e
#     "error: #{e.message}"            # hand it back to the model
#   end
module LittleGhost
  # The base of every error this gem raises.
  #
  #   rescue LittleGhost::Error => e
  class Error < StandardError
  end

  # Invalid trusted configuration (a bad declaration, a provider that returned the wrong class).
  #
  #   LittleGhost::Workspace.build(nil)
  #   # LittleGhost::ConfigurationError: no workspace is configured; set config.workspace = {provider: :directory, root: "..."}
  class ConfigurationError < Error
  end

  # A sandbox set-up problem detected before any model work: the base of UnsupportedPlatformError,
  # DependencyError, CapabilityError and PolicyError. Rescue it around Sandbox.build and Sandbox#open.
  #
  #   begin
  #     sandbox = LittleGhost::Sandbox.build(declaration, workspace: workspace).open
  #   rescue LittleGhost::SandboxConfigurationError => e
  #     abort "cannot start the sandbox: #{e.message}"
  #   end
  class SandboxConfigurationError < ConfigurationError
  end

  # The backend cannot run on this operating system.
  #
  #   LittleGhost::Sandboxes::Seatbelt.new(workspace: workspace).open   # on Linux
  #   # LittleGhost::UnsupportedPlatformError: Seatbelt sandboxing requires macOS and /usr/bin/sandbox-exec
  class UnsupportedPlatformError < SandboxConfigurationError
  end

  # A provider name that is not registered (the message lists the registered ones), or a dependency that is
  # missing or unusable (the message says what to install or enable).
  #
  #   LittleGhost::Sandbox.resolve_provider(:bwrap)
  #   # LittleGhost::DependencyError: sandbox provider :bwrap is not available; it is not a registered sandbox
  #   #   provider (registered: :bubblewrap, :native, :seatbelt, :unrestricted)
  class DependencyError < SandboxConfigurationError
  end

  # A control the backend cannot enforce, or a scope that would widen its parent.
  #
  #   sandbox.scope(files: {source: :read_write})   # source is read-only in the policy
  #   # LittleGhost::CapabilityError: sandbox scope cannot make a read-only mount writable
  class CapabilityError < SandboxConfigurationError
  end

  # An invalid policy, limits value or declaration.
  #
  #   LittleGhost::Sandbox::Limits.new(read_bytes: 0)
  #   # LittleGhost::PolicyError: sandbox read_bytes must be positive
  class PolicyError < SandboxConfigurationError
  end

  # An operation of the Sandbox base class that the backend does not implement.
  #
  #   LittleGhost::Sandbox.new(workspace: workspace).read("a")   # LittleGhost::AbstractMethodError
  class AbstractMethodError < Error
  end

  # An expected failure of one operation (a refused or missing path, a limit, a timeout). Its message never
  # embeds host paths or internal exception text, so it is safe to show a model.
  #
  #   sandbox.read("missing.md")   # LittleGhost::ToolError: Path does not exist
  class ToolError < Error
  end

  # Raised by a context's <tt>check!</tt> once its run was cancelled; the sandbox kills the running program and
  # re-raises it unchanged.
  #
  #   sandbox.execute_program(["sleep", "60"], timeout: 120, context: run_context)   # CancelledError when cancelled
  class CancelledError < Error
  end

  # Raised by a context's <tt>check!</tt> once its deadline passed; handled like CancelledError.
  #
  #   raise LittleGhost::DeadlineExceededError, "The run deadline was reached"
  class DeadlineExceededError < Error
  end

  # A managed resource failed to close.
  #
  #   rescue LittleGhost::CleanupError => e
  #     logger.warn(e.message)
  class CleanupError < Error
  end

  class Sandbox
    # Raised by +execute_program+ (and +execute+, ProcessRunner.run) when the program outlives its +timeout+. It is
    # a LittleGhost::ToolError with the same message as before ("Command timed out after SECONDS seconds"), so
    # existing rescues keep working; the process tree is gone when it is raised.
    #
    #   begin
    #     sandbox.execute_program(["sh", "-c", "echo partial; sleep 3"], timeout: 1)
    #   rescue LittleGhost::Sandbox::TimeoutError => e
    #     e.execution.stdout   # => "partial\n"
    #   end
    class TimeoutError < LittleGhost::ToolError
      ##
      # :attr_reader: execution
      #
      # The LittleGhost::Sandbox::Execution of what the program wrote before it was terminated (bounded and
      # scrubbed like any Execution; +exit_code+ nil, +signal+ the signal that ended it).
      #
      #   error.execution.stdout   # => "partial\n"
    end

    # Raised when a program passed its +memory_bytes+ or +cpu_seconds+ limit and was ended: "Program memory
    # exceeded N bytes" or "Program CPU time exceeded N seconds". The same class, message and +:limit+ Denial
    # whatever enforced the limit: a launch cgroup, or (without a writable cgroup) sampled memory and the
    # per-process RLIMIT_CPU. Also raised by a ProcessSession ended at one of these limits or at its combined
    # +output_bytes+ ("Program output exceeded N bytes", an +:output_limit+ Denial of the sandbox that started
    # it): the session is terminated and every later call raises the same error. A LittleGhost::ToolError, so
    # existing rescues keep working.
    #
    #   begin
    #     sandbox.execute_program(["sh", "-c", "echo started; while :; do :; done"], timeout: 60, cpu_seconds: 1)
    #   rescue LittleGhost::Sandbox::LimitError => e
    #     e.execution.stdout   # => "started\n"
    #   end
    class LimitError < LittleGhost::ToolError
      ##
      # :attr_reader: execution
      #
      # The LittleGhost::Sandbox::Execution of what +execute_program+'s program wrote before it was ended. For a
      # session (memory, CPU or output limit), the output no +read+ returned, up to the session's +output_bytes+
      # (what +read+ returned plus this is everything the program wrote, up to the bound), with how the program
      # ended (its exit code or signal).
      #
      #   error.execution.stdout   # => "started\n"
    end
  end
end
