//! `LittleGhost::Sandboxes::Native` (SPEC §22, LL.2): the platform's isolated
//! backend (Seatbelt on macOS; on Linux Bubblewrap, else Landlock), chosen at
//! construction (the core's `native_choice`). It never falls back to
//! Unrestricted. The delegation itself is Ruby (lib/littleghost/sandbox/native.rb).

use magnus::{function, method, prelude::*, Error, RHash, RModule, Ruby, Value};

use crate::helpers::args::keywords_only;
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::probe;
use crate::ruby_api::bubblewrap::{self, platform_or_host};
use crate::ruby_api::sandbox::{self, SandboxObj};
use crate::ruby_api::{capabilities, errors, landlock, seatbelt};
use littleghost_sandbox_core::backend::launch_steps::Platform;
use littleghost_sandbox_core::backend::native::{
    linux_report, native_choice, unavailable_on, LinuxReport, NativeChoice, BUBBLEWRAP_OPTIONS,
};

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class =
        sandboxes.define_class("Native", constants::class(ruby, "LittleGhost::Sandbox")?)?;
    class.define_singleton_method("probe", function!(probe, -1))?;
    // For `initialize`, which is Ruby (lib/littleghost/sandbox/native.rb).
    let singleton = class.singleton_class()?;
    singleton.define_private_method("backend_class", function!(backend_class, 2))?;
    class.define_private_method("adopt", method!(adopt, 1))?;
    class.define_method("backend", method!(backend, 0))?;
    Ok(())
}

/// Whether the caller gave an option only Bubblewrap understands.
fn bubblewrap_configured(ruby: &Ruby, options: RHash) -> Result<bool, Error> {
    for name in BUBBLEWRAP_OPTIONS {
        if options.get(ruby.to_symbol(name)).is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What Native runs on Linux (SPEC LL.2), with Bubblewrap's probe Hash.
struct LinuxChoice {
    choice: Result<NativeChoice, String>,
    bubblewrap_probe: RHash,
}

/// Probes Bubblewrap (with the caller's options) and, when needed, Landlock.
fn linux_choice(ruby: &Ruby, options: RHash, platform: &str) -> Result<LinuxChoice, Error> {
    let bubblewrap_probe = bubblewrap::probe_options(ruby, options)?;
    let available = |hash: RHash| -> Result<Result<(), String>, Error> {
        if hash
            .aref::<_, Value>(ruby.to_symbol("available"))?
            .to_bool()
        {
            return Ok(Ok(()));
        }
        let reason: Value = hash.aref(ruby.to_symbol("reason"))?;
        Ok(Err(convert::display_string(ruby, reason)?))
    };
    let bubblewrap = available(bubblewrap_probe)?;
    let configured = bubblewrap_configured(ruby, options)?;
    let landlock = match landlock::unavailable_reason(platform) {
        None => Ok(()),
        Some(reason) => Err(reason),
    };
    Ok(LinuxChoice {
        choice: native_choice(bubblewrap, landlock, configured),
        bubblewrap_probe,
    })
}

/// Seatbelt's probe on macOS; on Linux Bubblewrap's, else Landlock's (with
/// `backend:` naming the choice and `bubblewrap_reason:` why Bubblewrap was
/// passed over), else unavailable naming both reasons; unavailable elsewhere.
fn probe(ruby: &Ruby, args: &[Value]) -> Result<Value, Error> {
    let options: RHash = keywords_only(args)?;
    let platform_value = platform_or_host(ruby, options.delete(ruby.to_symbol("platform"))?)?;
    let platform = convert::display_string(ruby, platform_value)?;
    options.aset(ruby.to_symbol("platform"), platform_value)?;
    match Platform::of(&platform) {
        Platform::MacOs => return Ok(seatbelt::probe_options(ruby, options)?.as_value()),
        Platform::Other => {
            let unavailable = Some(unavailable_on(&platform));
            let result = probe::result(ruby, unavailable, || capabilities::empty(ruby))?;
            return Ok(result.as_value());
        }
        Platform::Linux => {}
    }
    let LinuxChoice {
        choice,
        bubblewrap_probe,
    } = linux_choice(ruby, options, &platform)?;
    let backend = ruby.to_symbol("backend");
    let configured = bubblewrap_configured(ruby, options)?;
    let result = match linux_report(choice, configured) {
        LinuxReport::Bubblewrap => {
            bubblewrap_probe.aset(backend, ruby.to_symbol("bubblewrap"))?;
            bubblewrap_probe
        }
        LinuxReport::Landlock { bubblewrap_reason } => {
            let landlock_options = ruby.hash_new();
            landlock_options.aset(ruby.to_symbol("platform"), platform_value)?;
            let result = landlock::probe_options(ruby, landlock_options)?;
            result.aset(backend, ruby.to_symbol("landlock"))?;
            result.aset(ruby.to_symbol("bubblewrap_reason"), bubblewrap_reason)?;
            result
        }
        LinuxReport::Unavailable(reason) => {
            let result = probe::result(ruby, Some(reason), || capabilities::empty(ruby))?;
            result.aset(backend, ruby.qnil())?;
            result
        }
    };
    Ok(result.as_value())
}

/// `backend_class(platform, options)`, the class `initialize` builds:
/// Seatbelt on macOS; on Linux Bubblewrap, else Landlock (LL.2), else
/// DependencyError naming both reasons; UnsupportedPlatformError elsewhere.
fn backend_class(ruby: &Ruby, platform: Value, options: RHash) -> Result<Value, Error> {
    let platform = &convert::display_string(ruby, platform)?;
    let name = if Platform::of(platform) == Platform::MacOs {
        "LittleGhost::Sandboxes::Seatbelt"
    } else if Platform::of(platform) == Platform::Other {
        return Err(crate::ruby_api::errors::unsupported_platform_error(
            ruby,
            unavailable_on(platform),
        ));
    } else if bubblewrap_configured(ruby, options)? {
        "LittleGhost::Sandboxes::Bubblewrap"
    } else {
        let probe_options = ruby.hash_new();
        probe_options.aset(ruby.to_symbol("platform"), platform.as_str())?;
        match linux_choice(ruby, probe_options, platform)?.choice {
            Ok(NativeChoice::Bubblewrap) => "LittleGhost::Sandboxes::Bubblewrap",
            Ok(NativeChoice::Landlock { .. }) => "LittleGhost::Sandboxes::Landlock",
            Err(reason) => return Err(crate::ruby_api::errors::dependency_error(ruby, reason)),
        }
    };
    Ok(constants::class(ruby, name)?.as_value())
}

/// `adopt(backend)`: this sandbox shares the backend's workspace, policy and
/// limits, and enforces what it enforces. Only once, and only a backend
/// Native itself chooses (Bubblewrap, Landlock, Seatbelt): a Native must never
/// front a weaker backend while calling itself native.
fn adopt(ruby: &Ruby, rb_self: SandboxObj, backend: Value) -> Result<(), Error> {
    if sandbox::backend_value(ruby, rb_self).is_some() {
        return Err(errors::tool_error(
            ruby,
            "native sandbox is already initialized",
        ));
    }
    let chosen = ["Bubblewrap", "Landlock", "Seatbelt"].iter().any(|name| {
        constants::class(ruby, &format!("LittleGhost::Sandboxes::{name}"))
            .is_ok_and(|class| backend.class().equal(class).unwrap_or(false))
    });
    if !chosen {
        return Err(errors::type_error(
            ruby,
            "native sandbox adopts only a Bubblewrap, Landlock or Seatbelt backend",
        ));
    }
    let own = constants::class(ruby, "LittleGhost::Sandboxes::Native")?;
    let policy = sandbox::enforced_policy(ruby, backend)?;
    let capabilities = sandbox::enforced_capabilities(ruby, backend)?;
    sandbox::set_backend(rb_self, backend);
    sandbox::set_enforced(rb_self, own, policy, capabilities);
    sandbox::store(
        ruby,
        rb_self,
        sandbox::workspace_of(ruby, backend),
        sandbox::requested_policy(ruby, backend),
        ruby.hash_new().as_value(),
        sandbox::limits_of(ruby, backend),
    )
}

/// The platform backend every operation is delegated to.
fn backend(rb_self: SandboxObj) -> Result<Value, Error> {
    let ruby = Ruby::get_with(rb_self);
    sandbox::backend_value(&ruby, rb_self).ok_or_else(|| {
        crate::ruby_api::errors::tool_error(&ruby, "native sandbox is not initialized")
    })
}
