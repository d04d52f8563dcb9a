//! `LittleGhost::Workspace` (SPEC §3): the root directory and named paths a
//! sandbox works in, their lifecycle (open/validate!/close) and the
//! workspace provider registry. Path rules live in the core's `workspace.rs`;
//! this file adds Ruby semantics (`File.expand_path`, callbacks). The state
//! lives in the [`Workspace`] struct (TypedData, with an allocator so Ruby
//! subclasses get it too), never in instance variables.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

use littleghost_sandbox_core::error::{Error as CoreError, Result as CoreResult};
use littleghost_sandbox_core::grants::Identity;
use littleghost_sandbox_core::workspace::{self as core, Layout};
use magnus::{
    function, gc::Marker, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args,
    typed_data::Obj, value::Opaque, DataTypeFunctions, Error, RHash, RModule, RString, Ruby,
    Symbol, TypedData, Value,
};

use crate::helpers::convert;
use crate::helpers::registry::Registry;
use crate::helpers::value_object as vo;
use crate::ruby_api::errors;

/// The (name, realpath, dev, ino) records `open` pinned, shared with scopes.
type Recorded = std::sync::Arc<Vec<(String, Identity)>>;

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
    config: RefCell<Option<std::sync::Arc<Config>>>,
    marked: Cell<[Option<Opaque<Value>>; 4]>,
    active: Cell<bool>,
    run: Cell<Option<Opaque<Value>>>,
    /// The (name, realpath, dev, ino) records `open` pinned (3.6 step 5).
    identities: RefCell<Option<Recorded>>,
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
    fn config(&self, ruby: &Ruby) -> Result<std::sync::Arc<Config>, Error> {
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

    /// `resolve` (3.3) in Rust: the identity check while open, then the
    /// lexical mapping. Core errors, so a scope can map them (SC.12).
    pub(crate) fn resolve_core(&self, reference: &Path) -> CoreResult<PathBuf> {
        let config = self.config.borrow().clone();
        let Some(config) = config else {
            return Err(CoreError::Tool("uninitialized workspace".to_owned()));
        };
        let recorded = self.recorded_identities();
        config.layout.resolve_checked(
            recorded.as_deref().map(Vec::as_slice),
            reference.as_os_str(),
        )
    }

    /// The identities `open` recorded, while the workspace is open.
    pub(crate) fn recorded_identities(&self) -> Option<Recorded> {
        if !self.active.get() {
            return None;
        }
        self.identities.borrow().clone()
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
    value
        .class()
        .equal(Workspace::class(ruby))
        .unwrap_or(false)
        .then_some(workspace)
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
    let (method, args) = match name {
        core::ROOT_NAME => ("root", Vec::new()),
        _ => ("path", vec![ruby.to_symbol(name).as_value()]),
    };
    let directory: Value = workspace.funcall(method, args.as_slice())?;
    Ok(convert::path_of(convert::path_string(
        ruby,
        directory,
        "workspace directory",
    )?))
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
    register_provider(
        ruby,
        ruby.to_symbol("directory").as_value(),
        class.as_value(),
    )?;
    Ok(())
}

/// The provider registry shared by `Workspace` and its subclasses.
static PROVIDERS: Registry = Registry {
    base: "LittleGhost::Workspace",
    label: "workspace",
    table: &WORKSPACE_PROVIDERS,
};
static WORKSPACE_PROVIDERS: magnus::value::Lazy<RHash> =
    magnus::value::Lazy::new(|ruby| ruby.hash_new());

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

fn check_callable(ruby: &Ruby, value: Option<Value>, label: &str) -> Result<Option<Value>, Error> {
    match value {
        None => Ok(None),
        Some(value) if value.is_nil() => Ok(None),
        Some(value) if vo::responds(value, "call") => Ok(Some(value)),
        Some(_) => Err(errors::argument_error(
            ruby,
            format!("workspace {label} must be callable"),
        )),
    }
}

/// Workspace.new(root:, paths: {}, setup: nil, teardown: nil): a workspace rooted at the expanded `root`.
fn initialize(ruby: &Ruby, rb_self: &Workspace, args: &[Value]) -> Result<(), Error> {
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
    let mut relative: Vec<String> = Vec::new();
    let mut layout = Layout {
        root: root_path.clone(),
        paths: Vec::new(),
    };
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
                relative.push(label.clone());
                expanded
            };
            let expanded = RString::new_frozen(expanded);
            table.aset(name, expanded)?;
            layout.paths.push((label, convert::path_of(expanded)));
        }
    }
    errors::core_result(
        ruby,
        core::check_path_names(layout.paths.iter().map(|(name, _)| name.as_str())),
    )?;
    table.freeze();
    let setup = check_callable(ruby, setup, "setup")?.map(Opaque::from);
    let teardown = check_callable(ruby, teardown, "teardown")?.map(Opaque::from);
    rb_self.marked.set([
        Some(Opaque::from(root_string.as_value())),
        Some(Opaque::from(table.as_value())),
        setup,
        teardown,
    ]);
    *rb_self.config.borrow_mut() = Some(std::sync::Arc::new(Config {
        root: root_string.into(),
        paths: table.into(),
        layout,
        relative,
        setup,
        teardown,
    }));
    rb_self.active.set(false);
    rb_self.run.set(None);
    *rb_self.identities.borrow_mut() = None;
    Ok(())
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
    let key: Value = vo::name_to_sym(name, "workspace path name")?.as_value();
    paths(ruby, rb_self)?.funcall("fetch", (key,))
}

/// resolve(reference): the physical path of a logical one (`notes/a.md`, `workspace://NAME/REL`), checked lexically.
fn resolve(ruby: &Ruby, rb_self: &Workspace, reference: Value) -> Result<RString, Error> {
    // Kernel#String returns any String (subclasses included) unchanged.
    let reference = match RString::from_value(reference) {
        Some(string) => string,
        None => RString::try_convert(vo::kernel(ruby, "String", reference)?)?,
    };
    let physical = errors::core_result(ruby, rb_self.resolve_core(&convert::path_of(reference)))?;
    Ok(convert::path_to_ruby(ruby, &physical))
}

/// reference(physical): the logical path of a physical one; ArgumentError when it is outside the workspace.
fn reference(ruby: &Ruby, rb_self: &Workspace, physical: Value) -> Result<RString, Error> {
    let expanded = convert::path_of(vo::expand_path(ruby, physical, None)?);
    let logical = errors::core_result(ruby, rb_self.config(ruby)?.layout.reference(&expanded))?;
    Ok(convert::path_to_ruby(ruby, &PathBuf::from(logical)))
}

/// environment: `LITTLE_GHOST_WORKSPACE_ROOT` and one `LITTLE_GHOST_WORKSPACE_<NAME>` per path, a frozen Hash.
fn environment(ruby: &Ruby, rb_self: &Workspace) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    for (variable, dir) in rb_self.config(ruby)?.layout.environment() {
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
fn open_steps(ruby: &Ruby, rb_self: Obj<Workspace>, run: Value) -> Result<(), Error> {
    let config = rb_self.config(ruby)?;
    if let Some(setup) = config.setup {
        let kwargs = ruby.hash_new();
        kwargs.aset(ruby.to_symbol("workspace"), rb_self)?;
        kwargs.aset(ruby.to_symbol("run"), run)?;
        let _: Value = ruby
            .get_inner(setup)
            .funcall("call", (magnus::KwArgs(kwargs),))?;
    }
    let layout = &config.layout;
    std::fs::create_dir_all(&layout.root)
        .map_err(|e| system_call_error(ruby, e, "could not create the workspace root".into()))?;
    for (name, dir) in &layout.paths {
        if config.relative.contains(name) {
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
    *rb_self.identities.borrow_mut() = Some(std::sync::Arc::new(identities));
    Ok(())
}

/// open(run: nil): runs setup, creates the root and relative paths, and pins every directory's identity; returns self.
fn open(ruby: &Ruby, rb_self: Obj<Workspace>, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<_, (), (Option<Value>,), ()>(args.keywords, &[], &["run"])?;
    let (run,) = kwargs.optional;
    if !rb_self.active.get() {
        open_fresh(ruby, rb_self, run)?;
    }
    crate::ruby_api::ownership::yield_and_close(ruby, rb_self.as_value())
}

fn open_fresh(ruby: &Ruby, rb_self: Obj<Workspace>, run: Option<Value>) -> Result<(), Error> {
    let run = run.unwrap_or_else(|| ruby.qnil().as_value());
    rb_self.active.set(true);
    rb_self.run.set(Some(run.into()));
    if let Err(error) = open_steps(ruby, rb_self, run) {
        // Teardown runs after a partial setup; the original error wins.
        let _ = rb_self.funcall::<_, _, Value>("close", ());
        return Err(error);
    }
    Ok(())
}

/// open?: whether the workspace is open.
fn is_open(rb_self: &Workspace) -> bool {
    rb_self.active.get()
}

/// run: the run passed to `open`, or nil.
fn run(ruby: &Ruby, rb_self: &Workspace) -> Value {
    match rb_self.run.get() {
        Some(run) => ruby.get_inner(run),
        None => ruby.qnil().as_value(),
    }
}

/// Raises ToolError if root or a path changed since `open` (nothing to check when closed).
fn check_identities(ruby: &Ruby, rb_self: &Workspace, config: &Config) -> Result<(), Error> {
    let Some(recorded) = rb_self.recorded_identities() else {
        return Ok(()); // closed, or still inside `open`, before identities are pinned
    };
    errors::core_result(ruby, config.layout.validate(&recorded))
}

/// validate!: raises ToolError if root or any path was replaced, moved or removed since `open`; returns self.
fn validate(ruby: &Ruby, rb_self: Obj<Workspace>) -> Result<Obj<Workspace>, Error> {
    let config = rb_self.config(ruby)?;
    check_identities(ruby, &rb_self, &config)?;
    Ok(rb_self)
}

/// close: runs teardown once if open, then always resets; re-raises a teardown error after the reset.
fn close(ruby: &Ruby, rb_self: Obj<Workspace>) -> Result<(), Error> {
    if !rb_self.active.get() {
        return Ok(());
    }
    let teardown = rb_self.config(ruby)?.teardown;
    let result = match teardown {
        None => Ok(()),
        Some(teardown) => {
            let kwargs = ruby.hash_new();
            kwargs.aset(ruby.to_symbol("workspace"), rb_self)?;
            kwargs.aset(ruby.to_symbol("run"), run(ruby, &rb_self))?;
            ruby.get_inner(teardown)
                .funcall::<_, _, Value>("call", (magnus::KwArgs(kwargs),))
                .map(|_| ())
        }
    };
    rb_self.active.set(false);
    rb_self.run.set(None);
    *rb_self.identities.borrow_mut() = None;
    result
}

/// inspect: `#<LittleGhost::Workspace root="/w" paths={source: "/w/src"} open>`.
fn inspect(ruby: &Ruby, rb_self: Obj<Workspace>) -> Result<String, Error> {
    let class_name: RString = rb_self.class().funcall("to_s", ())?;
    let Ok(config) = rb_self.config(ruby) else {
        return Ok(format!("#<{} uninitialized>", class_name.to_string()?));
    };
    let root = vo::inspect_value(ruby, ruby.get_inner(config.root).as_value())?;
    let paths = vo::inspect_value(ruby, ruby.get_inner(config.paths).as_value())?;
    let state = if rb_self.active.get() { " open" } else { "" };
    Ok(format!(
        "#<{} root={root} paths={paths}{state}>",
        class_name.to_string()?
    ))
}
