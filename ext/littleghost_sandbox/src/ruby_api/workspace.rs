//! `LittleGhost::Workspace` (SPEC §3): the root directory and named paths a
//! sandbox works in, their lifecycle (open/validate!/close) and the
//! workspace provider registry. Path rules live in the core's `workspace.rs`;
//! this file adds Ruby semantics (`File.expand_path`, callbacks).

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use littleghost_sandbox_core::grants::Identity;
use littleghost_sandbox_core::workspace::{self as core, Layout};
use magnus::{
    function, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, Error, RArray,
    RHash, RModule, RObject, RString, Ruby, Symbol, Value,
};

use magnus::{typed_data::Obj, value::LazyId};

use crate::helpers::convert;
use crate::helpers::registry::Registry;
use crate::helpers::value_object as vo;
use crate::ruby_api::errors;

// `resolve` runs (with `validate!`) on every file operation: interning these
// names once instead of on every call is a measurable part of its cost.
static ROOT: LazyId = LazyId::new("root");
static PATHS: LazyId = LazyId::new("paths");
static VALIDATE: LazyId = LazyId::new("validate!");
static ACTIVE: LazyId = LazyId::new("@active");
/// Hidden (no `@`): the identities pinned by `open`, kept in Rust form so
/// `validate!` need not convert them back from Ruby objects on every call.
static IDENTITIES: LazyId = LazyId::new("__littleghost_workspace_identities");

/// The (name, realpath, dev, ino) records `open` pinned (3.6 step 5).
#[magnus::wrap(class = "LittleGhost::Workspace::Identities", free_immediately, size)]
struct Identities(Vec<(String, Identity)>);

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let class = little_ghost.define_class("Workspace", ruby.class_object())?;
    let identities = class.define_class("Identities", ruby.class_object())?;
    identities.undef_default_alloc_func();
    class.define_singleton_method("register_provider", function!(register_provider, 2))?;
    class.define_singleton_method("resolve_provider", function!(resolve_provider, 1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("root", method!(root, 0))?;
    class.define_method("paths", method!(paths, 0))?;
    class.define_method("path", method!(path, 1))?;
    class.define_method("resolve", method!(resolve, 1))?;
    class.define_method("reference", method!(reference, 1))?;
    class.define_method("environment", method!(environment, 0))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("open?", method!(is_open, 0))?;
    class.define_method("run", method!(run, 0))?;
    class.define_method("validate!", method!(validate, 0))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("inspect", method!(inspect, 0))?;
    register_provider(
        ruby,
        ruby.to_symbol("directory").as_value(),
        class.as_value(),
    )?;
    Ok(())
}

/// The provider registry shared by `Workspace` and its subclasses.
const PROVIDERS: Registry = Registry {
    base: "LittleGhost::Workspace",
    label: "workspace",
};

/// Workspace.register_provider(name, klass): registers a Workspace class under `name`.
fn register_provider(ruby: &Ruby, name: Value, implementation: Value) -> Result<Value, Error> {
    PROVIDERS.register(ruby, name, implementation, || {
        errors::argument_error(
            ruby,
            format!(
                "workspace provider must be a Workspace class, got {}",
                vo::inspect_value(ruby, implementation).unwrap_or_default()
            ),
        )
    })
}

/// Workspace.resolve_provider(name): the registered class, or DependencyError.
fn resolve_provider(ruby: &Ruby, name: Value) -> Result<Value, Error> {
    PROVIDERS.resolve(ruby, name)
}

fn check_callable(ruby: &Ruby, value: Option<Value>, label: &str) -> Result<Value, Error> {
    match value {
        None => Ok(ruby.qnil().as_value()),
        Some(value) if value.is_nil() || vo::responds(value, "call") => Ok(value),
        Some(_) => Err(errors::argument_error(
            ruby,
            format!("workspace {label} must be callable"),
        )),
    }
}

/// Workspace.new(root:, paths: {}, setup: nil, teardown: nil): a workspace rooted at the expanded `root`.
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<_, (Value,), (Option<Value>, Option<Value>, Option<Value>), ()>(
        args.keywords,
        &["root"],
        &["paths", "setup", "teardown"],
    )?;
    let (root_value,) = kwargs.required;
    let (paths_value, setup, teardown) = kwargs.optional;
    let root_string = vo::expand_path(ruby, root_value, None)?;
    let root_string = RString::new_frozen(root_string);
    let root_path = convert::path_of(root_string);

    let table = ruby.hash_new();
    let relative = ruby.ary_new();
    let mut names: Vec<String> = Vec::new();
    if let Some(paths_value) = paths_value {
        if !vo::responds(paths_value, "each_pair") {
            return Err(errors::argument_error(
                ruby,
                "workspace paths must be a Hash",
            ));
        }
        for (name, value) in vo::pairs(paths_value)? {
            let name: Symbol = vo::name_to_sym(name, "workspace path name")?;
            let label = vo::sym_name(name)?;
            let text: RString = value.funcall("to_s", ())?;
            if text.is_empty() {
                return Err(errors::argument_error(
                    ruby,
                    format!("workspace path :{label} must not be empty"),
                ));
            }
            let is_absolute = convert::path_of(text).is_absolute();
            let expanded = if is_absolute {
                vo::expand_path(ruby, text.as_value(), None)?
            } else {
                let expanded =
                    vo::expand_path(ruby, text.as_value(), Some(root_string.as_value()))?;
                errors::core_result(
                    ruby,
                    core::check_relative_path(&label, &root_path, &convert::path_of(expanded)),
                )?;
                relative.push(name)?;
                expanded
            };
            table.aset(name, RString::new_frozen(expanded))?;
            names.push(label);
        }
    }
    errors::core_result(
        ruby,
        core::check_path_names(names.iter().map(String::as_str)),
    )?;
    table.freeze();
    relative.freeze();
    rb_self.ivar_set("@root", root_string)?;
    rb_self.ivar_set("@paths", table)?;
    rb_self.ivar_set("@relative_paths", relative)?;
    rb_self.ivar_set("@setup", check_callable(ruby, setup, "setup")?)?;
    rb_self.ivar_set("@teardown", check_callable(ruby, teardown, "teardown")?)?;
    rb_self.ivar_set("@active", false)?;
    rb_self.ivar_set("@run", ruby.qnil())?;
    rb_self.ivar_set(*IDENTITIES, ruby.qnil())?;
    Ok(())
}

/// root: the expanded workspace root, a frozen String.
fn root(rb_self: RObject) -> Result<Value, Error> {
    rb_self.ivar_get("@root")
}

/// paths: the named paths, a frozen Hash of Symbol to frozen absolute String.
fn paths(rb_self: RObject) -> Result<Value, Error> {
    rb_self.ivar_get("@paths")
}

/// path(name): the directory of a named path (`paths.fetch(name.to_sym)`), KeyError when unknown.
fn path(rb_self: RObject, name: Value) -> Result<Value, Error> {
    let key: Value = vo::name_to_sym(name, "workspace path name")?.as_value();
    let table: Value = rb_self.funcall("paths", ())?;
    table.funcall("fetch", (key,))
}

/// The core layout, read through Ruby dispatch so subclass overrides of `root`/`paths` win.
fn layout(rb_self: RObject) -> Result<Layout, Error> {
    let mut layout = root_layout(rb_self)?;
    let table: Value = rb_self.funcall(*PATHS, ())?;
    for (name, dir) in vo::pairs(table)? {
        let name = vo::sym_name(Symbol::try_convert(name)?)?;
        layout
            .paths
            .push((name, convert::path_of(RString::try_convert(dir)?)));
    }
    Ok(layout)
}

/// The layout without named paths: all a root-relative reference needs.
fn root_layout(rb_self: RObject) -> Result<Layout, Error> {
    let root = RString::try_convert(rb_self.funcall::<_, _, Value>(*ROOT, ())?)?;
    Ok(Layout {
        root: convert::path_of(root),
        paths: Vec::new(),
    })
}

fn active(rb_self: RObject) -> Result<bool, Error> {
    Ok(rb_self.ivar_get::<_, Value>(*ACTIVE)?.to_bool())
}

/// resolve(reference): the physical path of a logical one (`notes/a.md`, `workspace://NAME/REL`), checked lexically.
fn resolve(ruby: &Ruby, rb_self: RObject, reference: Value) -> Result<RString, Error> {
    if active(rb_self)? {
        let _: Value = rb_self.funcall(*VALIDATE, ())?;
    }
    // Kernel#String returns any String (subclasses included) unchanged.
    let reference = match RString::from_value(reference) {
        Some(string) => string,
        None => RString::try_convert(vo::kernel(ruby, "String", reference)?)?,
    };
    let reference = convert::path_of(reference);
    let named = reference
        .as_os_str()
        .as_bytes()
        .starts_with(core::SCHEME.as_bytes());
    let layout = if named {
        layout(rb_self)?
    } else {
        root_layout(rb_self)?
    };
    let physical = errors::core_result(ruby, layout.resolve(reference.as_os_str()))?;
    Ok(convert::path_to_ruby(ruby, &physical))
}

/// reference(physical): the logical path of a physical one; ArgumentError when it is outside the workspace.
fn reference(ruby: &Ruby, rb_self: RObject, physical: Value) -> Result<RString, Error> {
    let expanded = convert::path_of(vo::expand_path(ruby, physical, None)?);
    let logical = errors::core_result(ruby, layout(rb_self)?.reference(&expanded))?;
    Ok(convert::path_to_ruby(ruby, &PathBuf::from(logical)))
}

/// environment: `LITTLE_GHOST_WORKSPACE_ROOT` and one `LITTLE_GHOST_WORKSPACE_<NAME>` per path, a frozen Hash.
fn environment(ruby: &Ruby, rb_self: RObject) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    for (variable, dir) in layout(rb_self)?.environment() {
        hash.aset(
            vo::frozen_str(ruby, &variable),
            convert::path_to_ruby(ruby, &dir),
        )?;
    }
    hash.freeze();
    Ok(hash)
}

/// A Ruby `SystemCallError` (Errno::*) for a failed directory operation on a named path.
fn system_call_error(ruby: &Ruby, error: std::io::Error, what: String) -> Error {
    let class = ruby.exception_system_call_error();
    match error.raw_os_error() {
        Some(errno) => match class.funcall::<_, _, Value>("new", (what.clone(), errno)) {
            Ok(exception) => magnus::Exception::from_value(exception)
                .map(Error::from)
                .unwrap_or_else(|| errors::argument_error(ruby, what)),
            Err(error) => error,
        },
        None => errors::argument_error(ruby, format!("{what}: {error}")),
    }
}

/// Steps 2–6 of `open` (3.6): setup, directories, identities.
fn open_steps(ruby: &Ruby, rb_self: RObject, run: Value) -> Result<(), Error> {
    let setup: Value = rb_self.ivar_get("@setup")?;
    if !setup.is_nil() {
        let kwargs = ruby.hash_new();
        kwargs.aset(ruby.to_symbol("workspace"), rb_self)?;
        kwargs.aset(ruby.to_symbol("run"), run)?;
        let _: Value = setup.funcall("call", (magnus::KwArgs(kwargs),))?;
    }
    let layout = layout(rb_self)?;
    let relative: RArray = rb_self.ivar_get("@relative_paths")?;
    let relative: Vec<String> = relative
        .into_iter()
        .map(|name| Symbol::try_convert(name).and_then(vo::sym_name))
        .collect::<Result<_, _>>()?;
    std::fs::create_dir_all(&layout.root)
        .map_err(|e| system_call_error(ruby, e, "could not create the workspace root".into()))?;
    for (name, dir) in &layout.paths {
        if relative.contains(name) {
            std::fs::create_dir_all(dir).map_err(|e| {
                system_call_error(ruby, e, format!("could not create workspace path :{name}"))
            })?;
        } else if !dir.is_dir() {
            return Err(errors::argument_error(
                ruby,
                format!("absolute workspace path :{name} must already exist (as a directory; it is never created)"),
            ));
        }
    }
    let identities = errors::core_result(ruby, layout.capture_identities())?;
    rb_self.ivar_set(*IDENTITIES, Identities(identities))?;
    Ok(())
}

/// open(run: nil): runs setup, creates the root and relative paths, and pins every directory's identity; returns self.
fn open(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<_, (), (Option<Value>,), ()>(args.keywords, &[], &["run"])?;
    let (run,) = kwargs.optional;
    if !active(rb_self)? {
        open_fresh(ruby, rb_self, run)?;
    }
    crate::ruby_api::ownership::yield_and_close(ruby, rb_self.as_value())
}

fn open_fresh(ruby: &Ruby, rb_self: RObject, run: Option<Value>) -> Result<(), Error> {
    let run = run.unwrap_or_else(|| ruby.qnil().as_value());
    rb_self.ivar_set("@active", true)?;
    rb_self.ivar_set("@run", run)?;
    if let Err(error) = open_steps(ruby, rb_self, run) {
        // Teardown runs after a partial setup; the original error wins.
        let _ = rb_self.funcall::<_, _, Value>("close", ());
        return Err(error);
    }
    Ok(())
}

/// open?: whether the workspace is open.
fn is_open(rb_self: RObject) -> Result<bool, Error> {
    active(rb_self)
}

/// run: the run passed to `open`, or nil.
fn run(rb_self: RObject) -> Result<Value, Error> {
    rb_self.ivar_get("@run")
}

/// validate!: raises ToolError if root or any path was replaced, moved or removed since `open`; returns self.
fn validate(ruby: &Ruby, rb_self: RObject) -> Result<RObject, Error> {
    if !active(rb_self)? {
        return Ok(rb_self);
    }
    let Some(recorded) = rb_self.ivar_get::<_, Option<Obj<Identities>>>(*IDENTITIES)? else {
        return Ok(rb_self); // still inside `open`, before identities are pinned
    };
    errors::core_result(ruby, layout(rb_self)?.validate(&recorded.0))?;
    Ok(rb_self)
}

/// close: runs teardown once if open, then always resets; re-raises a teardown error after the reset.
fn close(ruby: &Ruby, rb_self: RObject) -> Result<(), Error> {
    if !active(rb_self)? {
        return Ok(());
    }
    let teardown: Value = rb_self.ivar_get("@teardown")?;
    let result = if teardown.is_nil() {
        Ok(())
    } else {
        let kwargs = ruby.hash_new();
        kwargs.aset(ruby.to_symbol("workspace"), rb_self)?;
        kwargs.aset(ruby.to_symbol("run"), rb_self.ivar_get::<_, Value>("@run")?)?;
        teardown
            .funcall::<_, _, Value>("call", (magnus::KwArgs(kwargs),))
            .map(|_| ())
    };
    rb_self.ivar_set("@active", false)?;
    rb_self.ivar_set("@run", ruby.qnil())?;
    rb_self.ivar_set(*IDENTITIES, ruby.qnil())?;
    result
}

/// inspect: `#<LittleGhost::Workspace root="/w" paths={source: "/w/src"}>`.
fn inspect(ruby: &Ruby, rb_self: RObject) -> Result<String, Error> {
    let mut text = vo::inspect_object(
        ruby,
        rb_self.as_value(),
        &[("root", "@root"), ("paths", "@paths")],
    )?;
    if active(rb_self)? {
        text.insert_str(text.len() - 1, " open");
    }
    Ok(text)
}
