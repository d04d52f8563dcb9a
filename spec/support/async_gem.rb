# frozen_string_literal: true

# The Fiber-scheduler examples run under the async gem. Debian packages it (with nio4r, a C extension) for the system
# Ruby only, so under another Ruby without async installed for it those examples are skipped, saying why.
begin
  require "async"
  ASYNC_MISSING = nil
rescue LoadError => e
  ASYNC_MISSING = "the async gem does not load under Ruby #{RUBY_VERSION} (#{e.message.lines.first.strip}); " \
                  "`gem install async` for this Ruby runs these examples"
end
