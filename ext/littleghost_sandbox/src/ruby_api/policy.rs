//! `LittleGhost::Sandbox::Policy` (SPEC §8): the requested file grants, runtime
//! grants, root filesystem mode, environment and network.

use littleghost_sandbox_core::grants::{Access, Grant};
use littleghost_sandbox_core::paths;
use magnus::{
    function, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, Error, RClass,
    RHash, RObject, RString, Ruby, Symbol, Value,
};

use crate::helpers::constants;
use crate::helpers::convert;
use crate::ruby_api::errors;
use crate::ruby_api::mount;

use crate::helpers::value_object::{self as vo, ivar_reader, value_methods};

/// The declaration keys every backend understands (8.1, CF.3).
pub const COMMON_KEYS: [&str; 5] = [
    "files",
    "runtime_paths",
    "root_filesystem",
    "environment",
    "network",
];
/// How a grant may be used (8.1).
pub const ACCESS_MODES: [&str; 2] = ["read_only", "read_write"];
/// What a process sees outside its grants (8.1).
pub const ROOT_FILESYSTEM_MODES: [&str; 3] = ["isolated", "read_only", "read_write"];

const IVARS: &[&str] = &[
    "@files",
    "@runtime_paths",
    "@root_filesystem",
    "@environment",
    "@network",
];
const FIELDS: &[(&str, &str)] = &[
    ("files", "@files"),
    ("runtime_paths", "@runtime_paths"),
    ("root_filesystem", "@root_filesystem"),
    ("environment", "@environment"),
    ("network", "@network"),
];

value_methods!(IVARS, FIELDS);

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Policy", ruby.class_object())?;
    let symbols = |names: &[&str]| {
        vo::frozen_symbols(
            ruby,
            &names.iter().map(|n| ruby.to_symbol(n)).collect::<Vec<_>>(),
        )
    };
    class.const_set("COMMON_KEYS", symbols(&COMMON_KEYS))?;
    class.const_set("ACCESS_MODES", symbols(&ACCESS_MODES))?;
    class.const_set("ROOT_FILESYSTEM_MODES", symbols(&ROOT_FILESYSTEM_MODES))?;
    class.define_singleton_method("coerce", function!(coerce, -1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("files", method!(files, 0))?;
    class.define_method("runtime_paths", method!(runtime_paths, 0))?;
    class.define_method("root_filesystem", method!(root_filesystem, 0))?;
    class.define_method("environment", method!(environment, 0))?;
    class.define_method("network", method!(network, 0))?;
    class.define_method("workspace_writable?", method!(workspace_writable, 0))?;
    class.define_method("process_grants", method!(process_grants, 1))?;
    class.define_method("to_h", method!(to_h, 0))?;
    define_value_methods(class)?;
    Ok(())
}

fn policy_class(ruby: &Ruby) -> Result<RClass, Error> {
    constants::class(ruby, "LittleGhost::Sandbox::Policy")
}

/// Policy.coerce(value = nil, **options): a Policy as is, or one built from a Hash with `options` merged over it.
fn coerce(ruby: &Ruby, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (Option<Value>,), (), (), RHash, ()>(args)?;
    let (value,) = args.optional;
    let options = args.keywords;
    let value = value.unwrap_or_else(|| ruby.qnil().as_value());
    let class = policy_class(ruby)?;
    if value.is_kind_of(class) && options.is_empty() {
        return Ok(value);
    }
    let merged = if value.is_nil() {
        ruby.hash_new()
    } else if vo::is_hash(ruby, value) {
        vo::symbolize_keys(ruby, value)?
    } else {
        return Err(errors::policy_error(
            ruby,
            "sandbox policy must be a Hash or Sandbox::Policy (pass options only with a Hash)",
        ));
    };
    for (key, item) in vo::hash_pairs(options)? {
        merged.aset(key, item)?;
    }
    class.funcall("new", (magnus::KwArgs(merged),))
}

/// A frozen Symbol→Symbol grant Hash from `files:` or `runtime_paths:` (8.3).
fn grant_table(ruby: &Ruby, value: Value, label: &str) -> Result<RHash, Error> {
    if !vo::responds(value, "each_pair") {
        return Err(errors::policy_error(
            ruby,
            format!("sandbox {label} must be a Hash"),
        ));
    }
    let table = ruby.hash_new();
    for (name, access) in vo::pairs(value)? {
        let name = vo::try_to_sym(name)?.ok_or_else(|| {
            errors::policy_error(
                ruby,
                format!(
                    "sandbox {label} names must be Symbols or Strings, got {}",
                    vo::inspect_value(ruby, name).unwrap_or_default()
                ),
            )
        })?;
        let mode = vo::try_to_sym(access)?
            .map(vo::sym_name)
            .transpose()?
            .filter(|mode| ACCESS_MODES.contains(&mode.as_str()));
        let Some(mode) = mode else {
            return Err(errors::policy_error(
                ruby,
                format!(
                    "sandbox {label} access for :{} must be :read_only or :read_write, got {}",
                    vo::sym_name(name)?,
                    vo::inspect_value(ruby, access).unwrap_or_default()
                ),
            ));
        };
        table.aset(name, ruby.to_symbol(mode))?;
    }
    table.freeze();
    Ok(table)
}

/// Policy.new(files: {root: :read_only}, runtime_paths: {}, root_filesystem: :isolated, environment: {}, network: nil): a frozen policy.
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<
        _,
        (),
        (
            Option<Value>,
            Option<Value>,
            Option<Value>,
            Option<Value>,
            Option<Value>,
        ),
        (),
    >(args.keywords, &[], &COMMON_KEYS)?;
    let (files, runtime_paths, root_filesystem, environment, network) = kwargs.optional;
    let files = match files {
        Some(value) => grant_table(ruby, value, "files")?,
        None => {
            let table = ruby.hash_new();
            table.aset(ruby.to_symbol("root"), ruby.to_symbol("read_only"))?;
            table.freeze();
            table
        }
    };
    let runtime_paths = match runtime_paths {
        Some(value) => grant_table(ruby, value, "runtime_paths")?,
        None => {
            let table = ruby.hash_new();
            table.freeze();
            table
        }
    };
    let root_filesystem = match root_filesystem {
        None => ruby.to_symbol("isolated"),
        Some(value) => vo::try_to_sym(value)?
            .filter(|mode| {
                vo::sym_name(*mode)
                    .map(|name| ROOT_FILESYSTEM_MODES.contains(&name.as_str()))
                    .unwrap_or(false)
            })
            .ok_or_else(|| {
                errors::policy_error(
                    ruby,
                    format!(
                        "sandbox root_filesystem must be :isolated, :read_only or :read_write, got {}",
                        vo::inspect_value(ruby, value).unwrap_or_default()
                    ),
                )
            })?,
    };
    let environment_class = constants::class(ruby, "LittleGhost::Sandbox::EnvironmentPolicy")?;
    let environment: Value = match environment {
        Some(value) => environment_class.funcall("coerce", (value,))?,
        None => environment_class.funcall("coerce", (ruby.hash_new(),))?,
    };
    let network_class = constants::class(ruby, "LittleGhost::Sandbox::NetworkPolicy")?;
    let network: Value = match network {
        Some(value) => network_class.funcall("coerce", (value,))?,
        None => ruby.qnil().as_value(),
    };
    rb_self.ivar_set("@files", files)?;
    rb_self.ivar_set("@runtime_paths", runtime_paths)?;
    rb_self.ivar_set("@root_filesystem", root_filesystem)?;
    rb_self.ivar_set("@environment", environment)?;
    rb_self.ivar_set("@network", network)?;
    rb_self.freeze();
    Ok(())
}

ivar_reader!(
    files,
    "@files",
    "The tool-visible grants: a frozen Hash of workspace path name to access Symbol."
);
ivar_reader!(
    runtime_paths,
    "@runtime_paths",
    "The process-only grants: a frozen Hash of workspace path name to access Symbol."
);
ivar_reader!(
    root_filesystem,
    "@root_filesystem",
    "What a process sees outside its grants: :isolated, :read_only or :read_write."
);
ivar_reader!(
    environment,
    "@environment",
    "The EnvironmentPolicy for processes."
);
ivar_reader!(
    network,
    "@network",
    "The NetworkPolicy, or nil for the backend's secure default."
);

/// workspace_writable?: true iff the workspace root is granted `:read_write` to tools.
fn workspace_writable(ruby: &Ruby, rb_self: RObject) -> Result<bool, Error> {
    let files: RHash = rb_self.ivar_get("@files")?;
    Ok(match files.get(ruby.to_symbol("root")) {
        Some(access) => Symbol::from_value(access) == Some(ruby.to_symbol("read_write")),
        None => false,
    })
}

/// The absolute directory of a policy name in `workspace` (`root` or `workspace.path(name)`).
fn workspace_directory(
    ruby: &Ruby,
    workspace: Value,
    name: Symbol,
) -> Result<std::path::PathBuf, Error> {
    let path: Value = if vo::sym_name(name)? == "root" {
        workspace.funcall("root", ())?
    } else {
        workspace.funcall("path", (name,))?
    };
    let path = convert::path_of(RString::try_convert(path)?);
    if !path.is_absolute() {
        return Err(errors::argument_error(
            ruby,
            format!("workspace path :{} must be absolute", vo::sym_name(name)?),
        ));
    }
    Ok(paths::clean(&path))
}

fn grants_of(
    ruby: &Ruby,
    table: RHash,
    workspace: Value,
    tools: bool,
    out: &mut Vec<Grant>,
) -> Result<(), Error> {
    for (name, access) in vo::hash_pairs(table)? {
        let name = Symbol::try_convert(name)?;
        let access = Symbol::try_convert(access)?;
        let directory = workspace_directory(ruby, workspace, name)?;
        out.push(Grant {
            source: directory.clone(),
            target: directory,
            access: Access::parse(&vo::sym_name(access)?).unwrap_or(Access::ReadOnly),
            tools,
            protect_aliases: true,
        });
    }
    Ok(())
}

/// process_grants(workspace): a frozen Array of Mounts for every file and runtime grant, longest target first.
fn process_grants(ruby: &Ruby, rb_self: RObject, workspace: Value) -> Result<Value, Error> {
    vo::require_duck(workspace, "workspace", &["root", "path"])?;
    let mut grants = Vec::new();
    grants_of(
        ruby,
        rb_self.ivar_get("@files")?,
        workspace,
        true,
        &mut grants,
    )?;
    grants_of(
        ruby,
        rb_self.ivar_get("@runtime_paths")?,
        workspace,
        false,
        &mut grants,
    )?;
    // Stable: equal lengths keep file grants before runtime grants, in declaration order.
    grants.sort_by_key(|grant| std::cmp::Reverse(grant.target.as_os_str().len()));
    let array = ruby.ary_new_capa(grants.len());
    for grant in &grants {
        array.push(mount::grant_to_ruby(ruby, grant)?)?;
    }
    array.freeze();
    Ok(array.as_value())
}

/// to_h: the policy as the keyword Hash `Policy.new` accepts, frozen.
fn to_h(ruby: &Ruby, rb_self: RObject) -> Result<RHash, Error> {
    vo::fields_hash(ruby, rb_self, FIELDS)
}
