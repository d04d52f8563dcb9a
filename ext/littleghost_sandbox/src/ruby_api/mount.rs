//! `LittleGhost::Sandbox::Mount` (SPEC §9): the Ruby face of a core [`Grant`].
//! Narrowing is the core's `Grant::narrow`; this file only converts values.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use littleghost_sandbox_core::grants::{Access, Grant};
use littleghost_sandbox_core::paths;
use magnus::{
    function, method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, Error, RClass,
    RHash, RObject, RString, Ruby, Value,
};

use crate::helpers::constants;
use crate::helpers::convert;
use crate::helpers::value_object::{self as vo, ivar_reader};
use crate::ruby_api::errors;

const FIELDS: &[(&str, &str)] = &[
    ("source", "@source"),
    ("target", "@target"),
    ("access", "@access"),
    ("tools", "@tools"),
    ("protect_aliases", "@protect_aliases"),
];

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Mount", ruby.class_object())?;
    class.define_singleton_method("coerce", function!(coerce, -1))?;
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("source", method!(source, 0))?;
    class.define_method("target", method!(target, 0))?;
    class.define_method("access", method!(access, 0))?;
    class.define_method("protect_aliases", method!(protect_aliases, 0))?;
    class.define_method("tools", method!(tools, 0))?;
    class.define_method("read_only?", method!(is_read_only, 0))?;
    class.define_method("writable?", method!(is_writable, 0))?;
    class.define_method("protect_aliases?", method!(protect_aliases, 0))?;
    class.define_method("tool_visible?", method!(tools, 0))?;
    class.define_method("covers?", method!(covers, 1))?;
    class.define_method("narrow", method!(narrow, -1))?;
    class.define_method("==", method!(mount_eq, 1))?;
    class.define_method("eql?", method!(mount_eq, 1))?;
    class.define_method("hash", method!(mount_hash, 0))?;
    class.define_method("inspect", method!(inspect, 0))?;
    class.define_alias("to_s", "inspect")?;
    Ok(())
}

fn mount_class(ruby: &Ruby) -> Result<RClass, Error> {
    constants::class(ruby, "LittleGhost::Sandbox::Mount")
}

/// The core grant a Mount (or a Hash `Mount.coerce` accepts) describes.
pub fn grant_from_ruby(ruby: &Ruby, mount: Value) -> Result<Grant, Error> {
    let class = mount_class(ruby)?;
    let mount = if mount.is_kind_of(class) {
        mount
    } else {
        class.funcall("coerce", (mount,))?
    };
    let source = RString::try_convert(vo::ivar(mount, "@source")?)?;
    let target = RString::try_convert(vo::ivar(mount, "@target")?)?;
    let access = parse_access(ruby, vo::ivar(mount, "@access")?)?;
    Ok(Grant {
        source: convert::path_of(source),
        target: convert::path_of(target),
        access,
        tools: vo::ivar(mount, "@tools")?.to_bool(),
        protect_aliases: vo::ivar(mount, "@protect_aliases")?.to_bool(),
    })
}

/// A frozen Mount holding exactly `grant` (no further normalisation).
pub fn grant_to_ruby(ruby: &Ruby, grant: &Grant) -> Result<Value, Error> {
    let object = RObject::try_convert(mount_class(ruby)?.obj_alloc()?)?;
    set_fields(ruby, object, grant)?;
    Ok(object.as_value())
}

fn set_fields(ruby: &Ruby, object: RObject, grant: &Grant) -> Result<(), Error> {
    object.ivar_set("@source", convert::path_to_ruby(ruby, &grant.source))?;
    object.ivar_set("@target", convert::path_to_ruby(ruby, &grant.target))?;
    object.ivar_set("@access", ruby.to_symbol(grant.access.name()))?;
    object.ivar_set("@protect_aliases", grant.protect_aliases)?;
    object.ivar_set("@tools", grant.tools)?;
    object.freeze();
    Ok(())
}

/// `:read_only`/`:read_write` (name-ish), else PolicyError.
pub fn parse_access(ruby: &Ruby, value: Value) -> Result<Access, Error> {
    let name = match vo::try_to_sym(value)? {
        Some(symbol) => vo::sym_name(symbol)?,
        None => String::new(),
    };
    Access::parse(&name).ok_or_else(|| {
        errors::policy_error(
            ruby,
            format!(
                "mount access must be :read_only or :read_write, got {}",
                vo::inspect_value(ruby, value).unwrap_or_default()
            ),
        )
    })
}

/// `String(value)` as an absolute, cleaned target path; PolicyError for NUL, relative or `..`.
pub fn normalize_target(ruby: &Ruby, value: Value) -> Result<PathBuf, Error> {
    let string = RString::try_convert(vo::kernel(ruby, "String", value)?)?;
    let path = convert::path_of(string);
    let bytes = path.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(errors::policy_error(
            ruby,
            "mount target must not contain a NUL byte",
        ));
    }
    if !path.is_absolute() {
        return Err(errors::policy_error(
            ruby,
            format!(
                "mount target must be an absolute path, got {:?}",
                path.display().to_string()
            ),
        ));
    }
    if paths::has_parent_component(&path) {
        return Err(errors::policy_error(
            ruby,
            format!(
                "mount target must not contain '..', got {:?}",
                path.display().to_string()
            ),
        ));
    }
    Ok(paths::clean(&path))
}

/// Mount.new(source:, target:, access: :read_only, protect_aliases: false, tools: true, root: nil): a frozen grant object.
fn initialize(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<(), Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<
        _,
        (Value, Value),
        (Option<Value>, Option<Value>, Option<Value>, Option<Value>),
        (),
    >(
        args.keywords,
        &["source", "target"],
        &["access", "protect_aliases", "tools", "root"],
    )?;
    let (source, target) = kwargs.required;
    let (access, protect_aliases, tools, root) = kwargs.optional;
    let source_string = vo::kernel(ruby, "String", source)?;
    let source = vo::expand_path(ruby, source_string, root.filter(|r| !r.is_nil()))?;
    let grant = Grant {
        source: convert::path_of(source),
        target: normalize_target(ruby, target)?,
        access: match access {
            Some(value) => parse_access(ruby, value)?,
            None => Access::ReadOnly,
        },
        protect_aliases: protect_aliases.map(|v| v.to_bool()).unwrap_or(false),
        tools: tools.map(|v| v.to_bool()).unwrap_or(true),
    };
    set_fields(ruby, rb_self, &grant)
}

/// Mount.coerce(hash_or_mount, root: nil): a Mount unchanged, or one built from a Hash of its keywords.
fn coerce(ruby: &Ruby, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<_, (), (Option<Value>,), ()>(args.keywords, &[], &["root"])?;
    let (value,) = args.required;
    let (root,) = kwargs.optional;
    let class = mount_class(ruby)?;
    if value.is_kind_of(class) {
        return Ok(value);
    }
    if !vo::is_hash(ruby, value) {
        return Err(errors::policy_error(
            ruby,
            "sandbox mount must be a Hash or Sandbox::Mount",
        ));
    }
    let options = vo::symbolize_keys(ruby, value)?;
    if let Some(root) = root.filter(|r| !r.is_nil()) {
        if options.get(ruby.to_symbol("root")).is_none() {
            options.aset(ruby.to_symbol("root"), root)?;
        }
    }
    class.funcall("new", (magnus::KwArgs(options),))
}

ivar_reader!(
    source,
    "@source",
    "The host directory, an expanded frozen String."
);
ivar_reader!(
    target,
    "@target",
    "Where the directory appears, a cleaned absolute frozen String."
);
ivar_reader!(access, "@access", "`:read_only` or `:read_write`.");
ivar_reader!(
    protect_aliases,
    "@protect_aliases",
    "Whether physical aliases of this directory keep its access."
);
ivar_reader!(
    tools,
    "@tools",
    "Whether file tools may see this grant (false for a process-only runtime grant)."
);

/// read_only?: true for a `:read_only` mount.
fn is_read_only(ruby: &Ruby, rb_self: RObject) -> Result<bool, Error> {
    Ok(!parse_access(ruby, rb_self.ivar_get("@access")?)?.writable())
}

/// writable?: true for a `:read_write` mount.
fn is_writable(ruby: &Ruby, rb_self: RObject) -> Result<bool, Error> {
    Ok(parse_access(ruby, rb_self.ivar_get("@access")?)?.writable())
}

/// covers?(path): whether the normalised path is the target or lies beneath it.
fn covers(ruby: &Ruby, rb_self: RObject, path: Value) -> Result<bool, Error> {
    let path = normalize_target(ruby, path)?;
    Ok(grant_from_ruby(ruby, rb_self.as_value())?.covers(&path))
}

/// narrow(target: self.target, access: self.access): a narrower Mount whose source is the real directory; raises CapabilityError on widening or escape.
fn narrow(ruby: &Ruby, rb_self: RObject, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let kwargs = get_kwargs::<_, (), (Option<Value>, Option<Value>), ()>(
        args.keywords,
        &[],
        &["target", "access"],
    )?;
    let (target, access) = kwargs.optional;
    let grant = grant_from_ruby(ruby, rb_self.as_value())?;
    let target = match target {
        Some(value) => normalize_target(ruby, value)?,
        None => grant.target.clone(),
    };
    let access = match access {
        Some(value) => parse_access(ruby, value)?,
        None => grant.access,
    };
    let narrowed = errors::core_result(ruby, grant.narrow(&target, access))?;
    grant_to_ruby(ruby, &narrowed)
}

/// The source used for equality: its realpath when it exists.
fn identity_source(ruby: &Ruby, object: Value) -> Result<Value, Error> {
    let source = RString::try_convert(vo::ivar(object, "@source")?)?;
    match std::fs::canonicalize(convert::path_of(source)) {
        Ok(real) => Ok(convert::path_to_ruby(ruby, &real).as_value()),
        Err(_) => Ok(source.as_value()),
    }
}

const COMPARED: &[&str] = &["@target", "@access", "@protect_aliases", "@tools"];

/// ==(other): same real source, target, access, protect_aliases and tools.
fn mount_eq(ruby: &Ruby, rb_self: RObject, other: Value) -> Result<bool, Error> {
    if !other.is_kind_of(mount_class(ruby)?) {
        return Ok(false);
    }
    if !vo::equal_by(rb_self.as_value(), other, COMPARED, "eql?")? {
        return Ok(false);
    }
    identity_source(ruby, rb_self.as_value())?.eql(identity_source(ruby, other)?)
}

/// hash: consistent with `==`.
fn mount_hash(ruby: &Ruby, rb_self: RObject) -> Result<Value, Error> {
    let array = ruby.ary_new();
    array.push(identity_source(ruby, rb_self.as_value())?)?;
    for name in COMPARED {
        array.push(rb_self.ivar_get::<_, Value>(*name)?)?;
    }
    array.funcall("hash", ())
}

/// inspect: `#<LittleGhost::Sandbox::Mount source="/w" target="/w" access=:read_only ...>`.
fn inspect(ruby: &Ruby, rb_self: RObject) -> Result<String, Error> {
    vo::inspect_object(ruby, rb_self.as_value(), FIELDS)
}
