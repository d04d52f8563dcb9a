//! `LittleGhost::Sandboxes::Native` (SPEC §22, LL.2): the platform's isolated
//! backend (Seatbelt on macOS; on Linux Bubblewrap, else Landlock), chosen at
//! construction (the core's `native_choice`). It never falls back to
//! Unrestricted.
//!
//! Native behaves as the backend it chose for every public
//! method. Each is forwarded here, in C, with the caller's arguments,
//! keywords and block ([`forward`]): no Ruby frame (Forwardable's, or a
//! `native.rb`) stands between the caller and the backend, so an error's
//! first backtrace frame is the caller's. The Sandbox methods are forwarded
//! by Native's class ([`FORWARDED`]); a method only the chosen backend has
//! (Bubblewrap's `gateway`, Landlock's `tmpdir`) is forwarded by the
//! instance's singleton class, defined when it adopts the backend, so
//! `respond_to?` and NoMethodError stay the backend's.

use magnus::{
    function, method,
    prelude::*,
    rb_sys::{protect, AsRawId, AsRawValue, FromRawValue},
    Error, RArray, RClass, RHash, RModule, Ruby, Symbol, Value,
};

use crate::helpers::args::keywords_only;
use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::errors;
use crate::ruby_api::bubblewrap::{self, platform_or_host};
use crate::ruby_api::sandbox::backend::class_path;
use crate::ruby_api::sandbox::probe;
use crate::ruby_api::sandbox::{self, SandboxObj};
use crate::ruby_api::{capabilities, landlock, seatbelt};
use littleghost_sandbox_core::backend::effective::Backend;
use littleghost_sandbox_core::backend::launch_steps::Platform;
use littleghost_sandbox_core::backend::native::{self as native, unavailable_on, LinuxReport};

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class =
        sandboxes.define_class("Native", constants::class(ruby, "LittleGhost::Sandbox")?)?;
    class.define_singleton_method("probe", function!(probe, -1))?;
    class.define_private_method("initialize", method!(initialize, -1))?;
    class.define_method("backend", method!(backend, 0))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    for name in FORWARDED {
        class.define_method(name, method!(forward, -1))?;
    }
    Ok(())
}

/// The Sandbox methods every backend answers, forwarded to it as they are
/// called. `workspace`, `policy` and `limits` are adopted (equal values);
/// `open`, `close` and `inspect` are Native's own, around the backend's.
const FORWARDED: [&str; 19] = [
    "allows?",
    "capabilities",
    "denials",
    "effective_policy",
    "execute",
    "execute_program",
    "list",
    "network_log",
    "off_denial",
    "off_network",
    "on_denial",
    "on_network",
    "read",
    "replace",
    "scope",
    "start_program",
    "supports?",
    "writable?",
    "write",
];

/// The method being run, called on the backend with the same arguments,
/// keywords and block. It runs in the caller's frame (a C method adds no
/// Ruby frame), so what the backend raises points at the caller first.
fn forward(_ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    // Read from this C method's own frame before any other Ruby call.
    // SAFETY: called in a method's frame, with the GVL.
    let (name, keywords) = unsafe { (rb_sys::rb_frame_this_func(), rb_sys::rb_keyword_given_p()) };
    let target = backend(rb_self)?;
    call_backend(target, name, args, keywords)
}

/// `target.name(*args, **keywords, &block)` with this frame's block; a raise is returned as an Error.
fn call_backend(
    target: Value,
    name: rb_sys::ID,
    args: &[Value],
    keywords: std::os::raw::c_int,
) -> Result<Value, Error> {
    let raw: Vec<rb_sys::VALUE> = args.iter().map(|value| value.as_raw()).collect();
    let count = raw.len() as std::os::raw::c_int;
    // SAFETY: `raw` holds VALUEs live on this stack (`args`); protect turns a
    // raise into an Error; the block passed is the current (C) frame's.
    let out = protect(|| unsafe {
        rb_sys::rb_funcall_passing_block_kw(target.as_raw(), name, count, raw.as_ptr(), keywords)
    })?;
    // SAFETY: the VALUE Ruby just returned.
    Ok(unsafe { Value::from_raw(out) })
}

/// `Native.new(workspace:, platform: RUBY_PLATFORM, **options)`: builds the
/// backend Native chooses with the same keywords and adopts it. An explicit
/// `workspace: nil` is a missing workspace, as it always was.
fn initialize(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<(), Error> {
    let options: RHash = keywords_only(args)?;
    let options = RHash::from_value(options.funcall("dup", ())?)
        .ok_or_else(|| errors::type_error(ruby, "options must be a Hash"))?;
    let workspace = options.delete::<_, Option<Value>>(ruby.to_symbol("workspace"))?;
    if workspace.is_none_or(|workspace| workspace.is_nil()) {
        return Err(errors::argument_error(ruby, "missing keyword: :workspace"));
    }
    let platform = match options.delete::<_, Option<Value>>(ruby.to_symbol("platform"))? {
        Some(platform) if !platform.is_nil() => platform,
        _ => ruby.class_object().const_get::<_, Value>("RUBY_PLATFORM")?,
    };
    let class = backend_class(ruby, platform, options)?;
    let keywords = ruby.hash_new();
    keywords.aset(ruby.to_symbol("workspace"), workspace)?;
    keywords.aset(ruby.to_symbol("platform"), platform)?;
    keywords.funcall::<_, _, Value>("update", (options,))?;
    let argv = [keywords.as_raw()];
    // SAFETY: `class` is a Class; `argv` holds a Hash live on this stack, passed as keywords.
    let made = protect(|| unsafe {
        rb_sys::rb_class_new_instance_kw(1, argv.as_ptr(), class.as_raw(), 1)
    })?;
    // SAFETY: the VALUE Ruby just returned.
    adopt(ruby, rb_self, unsafe { Value::from_raw(made) })
}

/// open(run: nil) -> self; with a block, yields this Native sandbox, closes it
/// and returns the block's value. Opens the backend first (its errors raise
/// as the backend's), then this sandbox.
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    // SAFETY: read from this C method's own frame, with the GVL.
    let keywords = unsafe { rb_sys::rb_keyword_given_p() };
    let target = backend(rb_self)?;
    let raw: Vec<rb_sys::VALUE> = args.iter().map(|value| value.as_raw()).collect();
    let open_id = ruby.intern("open").as_raw();
    // SAFETY: as in call_backend, without passing the block (Native yields itself).
    protect(|| unsafe {
        rb_sys::rb_funcallv_kw(
            target.as_raw(),
            open_id,
            raw.len() as std::os::raw::c_int,
            raw.as_ptr(),
            keywords,
        )
    })?;
    crate::ruby_api::ownership::yield_and_close(ruby, rb_self.as_value())
}

/// close -> nil: closes the backend (terminating what it started), then this sandbox.
fn close(rb_self: SandboxObj) -> Result<(), Error> {
    let target = backend(rb_self)?;
    let _: Value = target.funcall("close", ())?;
    if let Some(state) = crate::ruby_api::sandbox::state::borrow(rb_self.as_value()) {
        state.set_opened(false);
    }
    Ok(())
}

/// Forwards, on this instance, every public method of the backend's class that Native lacks.
fn forward_backend_only(ruby: &Ruby, rb_self: SandboxObj, backend: Value) -> Result<(), Error> {
    let own: RClass = constants::class(ruby, "LittleGhost::Sandboxes::Native")?;
    let names: RArray = backend.class().funcall("public_instance_methods", ())?;
    let mut singleton = None;
    for name in names.into_iter() {
        let name = Symbol::try_convert(name)?;
        if own.funcall::<_, _, bool>("method_defined?", (name,))? {
            continue;
        }
        let class = match singleton {
            Some(class) => class,
            None => {
                let raw = rb_self.as_value().as_raw();
                // SAFETY: a Sandbox object can have a singleton class; may raise (protect).
                let made = protect(|| unsafe { rb_sys::rb_singleton_class(raw) })?;
                // SAFETY: the VALUE Ruby just returned (a Class).
                let made = RClass::from_value(unsafe { Value::from_raw(made) })
                    .ok_or_else(|| errors::type_error(ruby, "no singleton class"))?;
                *singleton.insert(made)
            }
        };
        class.define_method(name.name()?.as_ref(), method!(forward, -1))?;
    }
    Ok(())
}

/// Whether the caller gave an option only Bubblewrap understands.
fn bubblewrap_configured(ruby: &Ruby, options: RHash) -> bool {
    let given = |name: &&str| options.get(ruby.to_symbol(name)).is_some();
    native::BUBBLEWRAP_OPTIONS.iter().any(given)
}

/// Seatbelt's probe on macOS; on Linux Bubblewrap's, else Landlock's (with
/// `backend:` naming the choice and `bubblewrap_reason:` why Bubblewrap was
/// passed over), else unavailable naming both reasons; unavailable elsewhere.
fn probe(ruby: &Ruby, args: &[Value]) -> Result<Value, Error> {
    let options: RHash = keywords_only(args)?;
    let platform_value = platform_or_host(ruby, options.delete(ruby.to_symbol("platform"))?)?;
    let platform = convert::platform(ruby, platform_value)?;
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
    let configured = bubblewrap_configured(ruby, options);
    let bubblewrap = bubblewrap::probed(ruby, options)?;
    let backend = ruby.to_symbol("backend");
    let result = match native::linux_probe(&platform, configured, &bubblewrap) {
        LinuxReport::Bubblewrap => {
            let result = bubblewrap::probe_hash(ruby, bubblewrap)?;
            result.aset(backend, ruby.to_symbol("bubblewrap"))?;
            result
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
    let platform = &convert::platform(ruby, platform)?;
    let chosen = native::chosen(platform, bubblewrap_configured(ruby, options));
    let chosen = errors::core_result(ruby, chosen)?;
    Ok(constants::class(ruby, class_path(chosen))?.as_value())
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
    let chosen = [Backend::Bubblewrap, Backend::Landlock, Backend::Seatbelt]
        .map(|chosen| constants::class(ruby, class_path(chosen)))
        .into_iter()
        .any(|class| class.is_ok_and(|class| backend.class().equal(class).unwrap_or(false)));
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
    forward_backend_only(ruby, rb_self, backend)?;
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
        crate::helpers::errors::tool_error(&ruby, "native sandbox is not initialized")
    })
}
