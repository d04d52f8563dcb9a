//! `LittleGhost::Workspace` (SPEC §3): the root directory and named paths a
//! sandbox works in, their lifecycle (open/validate!/close) and the
//! workspace provider registry. The rules (path checks, resolution,
//! environment names, directory creation and identities) are the core's
//! `workspace` module; this file expands paths with Ruby semantics
//! (`File.expand_path`), calls the user's setup/teardown and converts. The
//! state lives in the [`Workspace`] struct (TypedData, with an allocator so
//! Ruby subclasses get it too), never in instance variables.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use littleghost_sandbox_core::error::{Error as CoreError, Result as CoreResult};
use littleghost_sandbox_core::fs::anchor::Anchors;
use littleghost_sandbox_core::grants::Identity;
use littleghost_sandbox_core::workspace::{self as core, Layout, OpenError, PathEntry};
use magnus::{
    function, gc::Marker, method, prelude::*, scan_args::get_kwargs, typed_data::Obj,
    value::Opaque, DataTypeFunctions, Error, KwArgs, RHash, RModule, RString, Ruby, TypedData,
    Value,
};

use crate::helpers::args::{keywords_only, kwargs};
use crate::helpers::convert;
use crate::helpers::errors;
use crate::helpers::registry::Registry;
use crate::helpers::value_object as vo;

/// The (name, realpath, dev, ino) records `open` pinned, shared with scopes.
type Recorded = Arc<Vec<(String, Identity)>>;

/// What `Workspace.new` fixed: the Ruby objects its readers return and the core layout.
struct Config {
    root: Opaque<RString>,
    paths: Opaque<RHash>,
    layout: Layout,
    /// Names of the paths given relative to the root (created by `open`).
    relative: Vec<String>,
    setup: Option<Opaque<Value>>,
    teardown: Option<Opaque<Value>>,
}

/// A workspace: its configuration and its open/closed lifecycle.
///
/// Ruby values sit in `Cell`s (read by `mark` without borrowing); Rust-only
/// state sits in `RefCell`s that are never held across a call into Ruby.
#[derive(TypedData, Default)]
#[magnus(class = "LittleGhost::Workspace", free_immediately, size, mark)]
pub struct Workspace {
    config: RefCell<Option<Arc<Config>>>,
    marked: Cell<[Option<Opaque<Value>>; 4]>,
    active: Cell<bool>,
    run: Cell<Option<Opaque<Value>>>,
    /// The (name, realpath, dev, ino) records `open` pinned (3.6 step 5).
    identities: RefCell<Option<Recorded>>,
    /// The handles `open` took: every grant is reached through them.
    anchors: RefCell<Option<Arc<Anchors>>>,
}

impl DataTypeFunctions for Workspace {
    fn mark(&self, marker: &Marker) {
        for value in self.marked.get().into_iter().flatten() {
            marker.mark(value);
        }
        if let Some(run) = self.run.get() {
            marker.mark(run);
        }
    }
}

impl Workspace {
    fn config(&self, ruby: &Ruby) -> Result<Arc<Config>, Error> {
        self.config
            .borrow()
            .clone()
            .ok_or_else(|| errors::type_error(ruby, "uninitialized workspace"))
    }

    /// The names of the workspace's paths (not `root`), once initialized.
    pub(crate) fn path_names(&self) -> Option<Vec<String>> {
        let config = self.config.borrow();
        let config = config.as_ref()?;
        Some(config.layout.paths.iter().map(|(n, _)| n.clone()).collect())
    }

    /// The layout once initialized, with the core's error otherwise.
    fn layout(&self) -> CoreResult<Arc<Config>> {
        let config = self.config.borrow().clone();
        config.ok_or_else(|| CoreError::Tool("uninitialized workspace".to_owned()))
    }

    /// `resolve` (3.3) in Rust, with core errors so a scope can map them (SC.12).
    pub(crate) fn resolve_core(&self, reference: &Path) -> CoreResult<PathBuf> {
        let recorded = self.recorded_identities();
        let recorded = recorded.as_deref().map(Vec::as_slice);
        let layout = &self.layout()?.layout;
        Ok(layout.resolve_checked(recorded, reference.as_os_str())?)
    }

    /// The identities `open` recorded, while the workspace is open (`reset` drops them).
    pub(crate) fn recorded_identities(&self) -> Option<Recorded> {
        self.identities.borrow().clone()
    }

    /// The handles `open` took, while the workspace is open (`reset` drops them).
    pub(crate) fn anchors(&self) -> Option<Arc<Anchors>> {
        self.anchors.borrow().clone()
    }

    /// `environment` (3.5) in Rust: one variable per directory, once initialized.
    pub(crate) fn environment_core(&self) -> CoreResult<Vec<(String, PathBuf)>> {
        Ok(self.layout()?.layout.environment())
    }

    /// `validate!` (3.6) in Rust: the recorded identities still hold.
    pub(crate) fn validate_core(&self) -> CoreResult<()> {
        let layout = &self.layout()?.layout;
        match self.recorded_identities() {
            Some(recorded) => Ok(layout.validate(&recorded)?),
            None => Ok(()),
        }
    }

    /// Back to closed: no run, no identities.
    fn reset(&self) {
        self.active.set(false);
        self.run.set(None);
        *self.identities.borrow_mut() = None;
        *self.anchors.borrow_mut() = None;
    }
}

/// The Workspace struct behind `value`, if it is one (or a subclass instance).
pub(crate) fn borrow(value: Value) -> Option<&'static Workspace> {
    <&Workspace>::try_convert(value).ok()
}

/// The Workspace struct behind `value` when Ruby dispatch would reach its
/// Rust methods: an instance of `Workspace` itself, not of a subclass (which
/// may override `root`, `path` or `resolve`) nor a duck-typed object.
pub(crate) fn native(ruby: &Ruby, value: Value) -> Option<&'static Workspace> {
    let workspace = borrow(value)?;
    let plain = value.class().equal(Workspace::class(ruby)).unwrap_or(false);
    plain.then_some(workspace)
}

/// The handles of `workspace` when it is an open Workspace (a subclass
/// included); None for a duck-typed one or a closed one.
pub(crate) fn anchors_of(workspace: Value) -> Option<Arc<Anchors>> {
    borrow(workspace).and_then(Workspace::anchors)
}

/// The directory `name` (`root` or a path name) stands for: the Rust state of
/// a plain Workspace, else the object's own `root` or `path(name)`.
pub(crate) fn directory(ruby: &Ruby, workspace: Value, name: &str) -> Result<PathBuf, Error> {
    if let Some(native) = native(ruby, workspace) {
        let config = native.config(ruby)?;
        if name == core::ROOT_NAME {
            return Ok(config.layout.root.clone());
        }
        let path = errors::core_result(ruby, config.layout.path(name))?;
        return Ok(path.to_path_buf());
    }
    // The Symbol is an argument on this stack, not in a Vec the GC cannot see.
    let directory: Value = match name {
        core::ROOT_NAME => workspace.funcall("root", ())?,
        _ => workspace.funcall("path", (ruby.to_symbol(name),))?,
    };
    let directory = convert::path_string(ruby, directory, "workspace directory")?;
    Ok(convert::path_of(directory))
}

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let class = little_ghost.define_class("Workspace", ruby.class_object())?;
    class.define_alloc_func::<Workspace>();
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
    let directory = ruby.to_symbol("directory").as_value();
    register_provider(ruby, directory, class.as_value())?;
    Ok(())
}

/// The provider registry shared by `Workspace` and its subclasses.
static PROVIDERS: Registry = Registry::new("LittleGhost::Workspace", "workspace");

/// Workspace.register_provider(name, klass): registers a Workspace class under `name`.
fn register_provider(ruby: &Ruby, name: Value, implementation: Value) -> Result<Value, Error> {
    PROVIDERS.register(ruby, name, implementation, || {
        let got = vo::inspect_value(ruby, implementation).unwrap_or_default();
        errors::argument_error(
            ruby,
            format!("workspace provider must be a Workspace class, got {got}"),
        )
    })
}

/// Workspace.resolve_provider(name): the registered class, or DependencyError.
fn resolve_provider(ruby: &Ruby, name: Value) -> Result<Value, Error> {
    PROVIDERS.resolve(ruby, name)
}

fn check_callable(ruby: &Ruby, value: Option<Value>, label: &str) -> Result<Option<Value>, Error> {
    match value.filter(|value| !value.is_nil()) {
        None => Ok(None),
        Some(value) if vo::responds(value, "call") => Ok(Some(value)),
        Some(_) => Err(errors::argument_error(
            ruby,
            format!("workspace {label} must be callable"),
        )),
    }
}

/// Workspace.new(root:, paths: {}, setup: nil, teardown: nil): a workspace rooted at the expanded `root`.
fn initialize(ruby: &Ruby, rb_self: &Workspace, args: &[Value]) -> Result<(), Error> {
    type Optional = (Option<Value>, Option<Value>, Option<Value>);
    let names = ["paths", "setup", "teardown"];
    let keywords = keywords_only(args)?;
    crate::helpers::args::refuse_unknown(ruby, keywords, &["root"], &names)?;
    let kwargs = get_kwargs::<_, (Value,), Optional, ()>(keywords, &["root"], &names)?;
    let (paths_value, setup, teardown) = kwargs.optional;
    let root = RString::new_frozen(convert::expand_path(ruby, kwargs.required.0, None)?);
    let (entries, table) = path_entries(ruby, root, paths_value)?;
    let (layout, relative) =
        errors::core_result(ruby, core::configure(convert::path_of(root), entries))?;
    let setup = check_callable(ruby, setup, "setup")?.map(Opaque::from);
    let teardown = check_callable(ruby, teardown, "teardown")?.map(Opaque::from);
    let values = [root.as_value(), table.as_value()].map(|v| Some(Opaque::from(v)));
    rb_self.marked.set([values[0], values[1], setup, teardown]);
    *rb_self.config.borrow_mut() = Some(Arc::new(Config {
        root: root.into(),
        paths: table.into(),
        layout,
        relative,
        setup,
        teardown,
    }));
    rb_self.reset();
    Ok(())
}

/// `paths:` as core entries (each value's text, expanded like `File.expand_path`,
/// against the root when relative) and the frozen Hash `paths` returns.
fn path_entries(
    ruby: &Ruby,
    root: RString,
    paths: Option<Value>,
) -> Result<(Vec<PathEntry>, RHash), Error> {
    let table = ruby.hash_new();
    let mut entries = Vec::new();
    if let Some(paths) = paths {
        if !vo::responds(paths, "each_pair") {
            return Err(errors::argument_error(
                ruby,
                "workspace paths must be a Hash",
            ));
        }
        for (name, value) in vo::pairs(paths)? {
            let name = vo::name_to_sym(name, "workspace path name")?;
            let text: RString = match RString::from_value(value) {
                Some(text) => text,
                None => value.funcall("to_s", ())?, // a Pathname, a Symbol
            };
            let given = convert::path_of(text);
            let base = (!given.is_absolute()).then_some(root.as_value());
            let expanded = RString::new_frozen(convert::expand_path(ruby, text.as_value(), base)?);
            table.aset(name, expanded)?;
            entries.push(PathEntry {
                name: vo::sym_name(name)?,
                given: given.into_os_string(),
                expanded: convert::path_of(expanded),
            });
        }
    }
    table.freeze();
    Ok((entries, table))
}

/// root: the expanded workspace root, a frozen String.
fn root(ruby: &Ruby, rb_self: &Workspace) -> Result<RString, Error> {
    Ok(ruby.get_inner(rb_self.config(ruby)?.root))
}

/// paths: the named paths, a frozen Hash of Symbol to frozen absolute String.
fn paths(ruby: &Ruby, rb_self: &Workspace) -> Result<RHash, Error> {
    Ok(ruby.get_inner(rb_self.config(ruby)?.paths))
}

/// path(name): the directory of a named path (`paths.fetch(name.to_sym)`), KeyError when unknown.
fn path(ruby: &Ruby, rb_self: &Workspace, name: Value) -> Result<Value, Error> {
    let key = vo::name_to_sym(name, "workspace path name")?;
    paths(ruby, rb_self)?.fetch(key)
}

/// resolve(reference): the physical path of a logical one (`notes/a.md`, `workspace://NAME/REL`), checked lexically.
fn resolve(ruby: &Ruby, rb_self: &Workspace, reference: Value) -> Result<RString, Error> {
    // Kernel#String returns any String (subclasses included) unchanged.
    let reference = match RString::from_value(reference) {
        Some(string) => string,
        None => RString::try_convert(vo::kernel(ruby, "String", reference)?)?,
    };
    let physical = rb_self.resolve_core(&convert::path_of(reference));
    Ok(convert::path_to_ruby(
        ruby,
        &errors::core_result(ruby, physical)?,
    ))
}

/// reference(physical): the logical path of a physical one; ArgumentError when it is outside the workspace.
fn reference(ruby: &Ruby, rb_self: &Workspace, physical: Value) -> Result<RString, Error> {
    let expanded = convert::path_of(convert::expand_path(ruby, physical, None)?);
    let logical = errors::core_result(ruby, rb_self.config(ruby)?.layout.reference(&expanded))?;
    Ok(convert::path_to_ruby(ruby, &PathBuf::from(logical)))
}

/// environment: `LITTLE_GHOST_WORKSPACE_ROOT` and one `LITTLE_GHOST_WORKSPACE_<NAME>` per path, a frozen Hash.
fn environment(ruby: &Ruby, rb_self: &Workspace) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    for (variable, dir) in rb_self.config(ruby)?.layout.environment() {
        let value = convert::path_to_ruby(ruby, &dir);
        hash.aset(vo::frozen_str(ruby, &variable), value)?;
    }
    hash.freeze();
    Ok(hash)
}

/// A Ruby `SystemCallError` (Errno::*) for a failed directory operation on a named path.
fn system_call_error(ruby: &Ruby, error: std::io::Error, what: String) -> Error {
    let Some(errno) = error.raw_os_error() else {
        return errors::argument_error(ruby, format!("{what}: {error}"));
    };
    match crate::ruby_api::process_runner::errno_exception(ruby, errno, Some(&what)) {
        Ok(exception) => exception.into(),
        Err(error) => error,
    }
}

/// `setup` or `teardown` (user callables) with `workspace:` and `run:`.
fn call_hook(ruby: &Ruby, hook: Opaque<Value>, workspace: Value, run: Value) -> Result<(), Error> {
    let kwargs = kwargs(ruby, &[("workspace", workspace), ("run", run)])?;
    let _: Value = ruby.get_inner(hook).funcall("call", (KwArgs(kwargs),))?;
    Ok(())
}

/// Steps 2–6 of `open` (3.6): setup, then the core creates the directories and pins identities.
fn open_steps(ruby: &Ruby, rb_self: Obj<Workspace>, run: Value) -> Result<(), Error> {
    let config = rb_self.config(ruby)?;
    if let Some(setup) = config.setup {
        call_hook(ruby, setup, rb_self.as_value(), run)?;
    }
    let (identities, anchors) = match config.layout.prepare(&config.relative) {
        Ok(prepared) => prepared,
        Err(OpenError::Create { name, error }) => {
            let what = OpenError::not_created(name.as_deref(), &errors::symbol);
            return Err(system_call_error(ruby, error, what));
        }
        Err(OpenError::Rule(error)) => return Err(errors::from_core(ruby, error)),
    };
    *rb_self.identities.borrow_mut() = Some(Arc::new(identities));
    *rb_self.anchors.borrow_mut() = Some(Arc::new(anchors));
    Ok(())
}

/// open(run: nil): runs setup, creates the root and relative paths, and pins every directory's identity; returns self.
fn open(ruby: &Ruby, rb_self: Obj<Workspace>, args: &[Value]) -> Result<Value, Error> {
    let kwargs = get_kwargs::<_, (), (Option<Value>,), ()>(keywords_only(args)?, &[], &["run"])?;
    let (run,) = kwargs.optional;
    if !rb_self.active.get() {
        let run = run.unwrap_or_else(|| ruby.qnil().as_value());
        rb_self.active.set(true);
        rb_self.run.set(Some(run.into()));
        if let Err(error) = open_steps(ruby, rb_self, run) {
            // Teardown runs after a partial setup (through `close`, which a
            // subclass may override); the original error wins.
            let _ = rb_self.funcall::<_, _, Value>("close", ());
            return Err(error);
        }
    }
    crate::ruby_api::ownership::yield_and_close(ruby, rb_self.as_value())
}

/// open?: whether the workspace is open.
fn is_open(rb_self: &Workspace) -> bool {
    rb_self.is_open()
}

impl Workspace {
    /// Whether `open` ran and `close` has not.
    pub(crate) fn is_open(&self) -> bool {
        self.active.get()
    }
}

/// run: the run passed to `open`, or nil.
fn run(ruby: &Ruby, rb_self: &Workspace) -> Value {
    match rb_self.run.get() {
        Some(run) => ruby.get_inner(run),
        None => ruby.qnil().as_value(),
    }
}

/// validate!: raises ToolError if root or any path was replaced, moved or removed since `open`; returns self.
fn validate(ruby: &Ruby, rb_self: Obj<Workspace>) -> Result<Obj<Workspace>, Error> {
    rb_self.config(ruby)?; // TypeError when uninitialized
    errors::core_result(ruby, rb_self.validate_core())?;
    Ok(rb_self)
}

/// close: runs teardown once if open, then always resets; re-raises a teardown error after the reset.
fn close(ruby: &Ruby, rb_self: Obj<Workspace>) -> Result<(), Error> {
    if !rb_self.active.get() {
        return Ok(());
    }
    let result = match rb_self.config(ruby)?.teardown {
        None => Ok(()),
        Some(teardown) => call_hook(ruby, teardown, rb_self.as_value(), run(ruby, &rb_self)),
    };
    rb_self.reset();
    result
}

/// inspect: `#<LittleGhost::Workspace root="/w" paths={source: "/w/src"} open>`.
fn inspect(ruby: &Ruby, rb_self: Obj<Workspace>) -> Result<String, Error> {
    let class_name = rb_self.class().inspect();
    let Ok(config) = rb_self.config(ruby) else {
        return Ok(format!("#<{class_name} uninitialized>"));
    };
    let root = vo::inspect_value(ruby, ruby.get_inner(config.root).as_value())?;
    let paths = vo::inspect_value(ruby, ruby.get_inner(config.paths).as_value())?;
    let state = if rb_self.active.get() { " open" } else { "" };
    Ok(format!("#<{class_name} root={root} paths={paths}{state}>"))
}
