//! `LittleGhost::Sandbox::Mount` (SPEC §9): the Ruby face of a core [`Grant`].
//! Target and access rules are the core's `policy::{normalize_target,
//! parse_access}`, narrowing is `Grant::narrow`; this file only converts.

use std::path::PathBuf;

use littleghost_sandbox_core::grants::{Access, Grant};
use littleghost_sandbox_core::policy as core;
use magnus::{
    method, prelude::*, scan_args::get_kwargs, scan_args::scan_args, typed_data::Obj, Error,
    RClass, RHash, RString, Ruby, TypedData, Value,
};

use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::helpers::{args, convert};

/// A frozen grant object holding the core [`Grant`].
#[magnus::wrap(class = "LittleGhost::Sandbox::Mount", free_immediately, size)]
pub struct Mount(Grant);

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("Mount", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_singleton_method("new", method!(new, -1))?;
    class.define_singleton_method("coerce", method!(coerce, -1))?;
    // read_only?: true for a `:read_only` mount.
    class.define_method("read_only?", method!(|m: &Mount| !m.0.access.writable(), 0))?;
    // writable?: true for a `:read_write` mount.
    class.define_method("writable?", method!(|m: &Mount| m.0.access.writable(), 0))?;
    class.define_method("covers?", method!(covers, 1))?;
    class.define_method("narrow", method!(narrow, -1))?;
    vo::define_value_methods!(class, Mount, false, [0, 1, 2, 3, 4])?;
    class.define_alias("protect_aliases?", "protect_aliases")?;
    class.define_alias("tool_visible?", "tools")
}

impl vo::ValueObject for Mount {
    type Core = Grant;

    // source: the host directory, an expanded frozen String; target: where
    // it appears, a cleaned absolute frozen String; access: `:read_only` or
    // `:read_write`; tools: whether file tools may see it (false for a
    // process-only runtime grant); protect_aliases: whether physical aliases
    // of the directory keep its access.
    const FIELDS: &'static [(&'static str, vo::Reader<Self>)] = &[
        ("source", |ruby, m| {
            Ok(convert::path_to_ruby(ruby, &m.0.source).as_value())
        }),
        ("target", |ruby, m| {
            Ok(convert::path_to_ruby(ruby, &m.0.target).as_value())
        }),
        ("access", |ruby, m| {
            Ok(ruby.to_symbol(m.0.access.name()).as_value())
        }),
        ("tools", |ruby, m| Ok(ruby.into_value(m.0.tools))),
        ("protect_aliases", |ruby, m| {
            Ok(ruby.into_value(m.0.protect_aliases))
        }),
    ];

    fn core(&self) -> &Grant {
        &self.0
    }

    /// The same real source (its realpath when it exists), target, access and flags.
    fn same(&self, _ruby: &Ruby, other: &Mount, _strict: bool) -> Result<bool, Error> {
        Ok(self.0.same_grant(&other.0))
    }

    fn hash_code(&self, _ruby: &Ruby) -> Result<i64, Error> {
        Ok(vo::hash_code(&self.0.identity()))
    }
}

/// The core grant a Mount (or a Hash `Mount.coerce` accepts) describes.
pub fn grant_from_ruby(ruby: &Ruby, mount: Value) -> Result<Grant, Error> {
    let mount = coerce_value(ruby, Mount::class(ruby), mount, None)?;
    Ok(<&Mount>::try_convert(mount)?.0.clone())
}

/// A frozen Mount holding exactly `grant` (no further normalisation).
pub fn grant_to_ruby(ruby: &Ruby, grant: &Grant) -> Result<Value, Error> {
    Ok(vo::frozen_obj(ruby, Mount(grant.clone()), Mount::class(ruby)).as_value())
}

/// `:read_only`/`:read_write` (name-ish), else PolicyError.
pub fn parse_access(ruby: &Ruby, value: Value) -> Result<Access, Error> {
    errors::core_result(ruby, core::parse_access(&vo::given(value)?))
}

/// `String(value)` as an absolute, cleaned target path; PolicyError for NUL, relative or `..`.
pub fn normalize_target(ruby: &Ruby, value: Value) -> Result<PathBuf, Error> {
    let string = RString::try_convert(vo::kernel(ruby, "String", value)?)?;
    let string = convert::checked_path(ruby, string, "target")?;
    errors::core_result(ruby, core::normalize_target(&convert::path_of(string)))
}

type Optional = (Option<Value>, Option<Value>, Option<Value>, Option<Value>);

/// Mount.new(source:, target:, access: :read_only, protect_aliases: false, tools: true, root: nil): a frozen grant object.
fn new(ruby: &Ruby, class: RClass, args: &[Value]) -> Result<Obj<Mount>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    build(ruby, class, args.keywords)
}

fn build(ruby: &Ruby, class: RClass, keywords: RHash) -> Result<Obj<Mount>, Error> {
    let kwargs = get_kwargs::<_, (Value, Value), Optional, ()>(
        keywords,
        &["source", "target"],
        &["access", "protect_aliases", "tools", "root"],
    )?;
    let (source, target) = kwargs.required;
    let (access, protect_aliases, tools, root) = kwargs.optional;
    let source_string = vo::kernel(ruby, "String", source)?;
    let source = convert::expand_path(ruby, source_string, root.filter(|r| !r.is_nil()))?;
    let grant = Grant {
        source: convert::path_of(source),
        target: normalize_target(ruby, target)?,
        access: match access {
            Some(value) => parse_access(ruby, value)?,
            None => Access::ReadOnly,
        },
        protect_aliases: protect_aliases.is_some_and(|v| v.to_bool()),
        tools: tools.is_none_or(|v| v.to_bool()),
    };
    Ok(vo::frozen_obj(ruby, Mount(grant), class))
}

/// Mount.coerce(hash_or_mount, root: nil): a Mount unchanged, or one built from a Hash of its keywords.
fn coerce(ruby: &Ruby, class: RClass, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    let [root] = args::optional(ruby, args.keywords, ["root"])?;
    let (value,) = args.required;
    coerce_value(ruby, class, value, root)
}

fn coerce_value(
    ruby: &Ruby,
    class: RClass,
    value: Value,
    root: Option<Value>,
) -> Result<Value, Error> {
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
    Ok(build(ruby, class, options)?.as_value())
}

/// covers?(path): whether the normalised path is the target or lies beneath it.
fn covers(ruby: &Ruby, rb_self: &Mount, path: Value) -> Result<bool, Error> {
    Ok(rb_self.0.covers(&normalize_target(ruby, path)?))
}

/// narrow(target: self.target, access: self.access): a narrower Mount whose source is the real directory; raises CapabilityError on widening or escape.
fn narrow(ruby: &Ruby, rb_self: Obj<Mount>, args: &[Value]) -> Result<Obj<Mount>, Error> {
    let args = scan_args::<(), (), (), (), RHash, ()>(args)?;
    let [target, access] = args::optional(ruby, args.keywords, ["target", "access"])?;
    let grant = &rb_self.0;
    let target = match target {
        Some(value) => normalize_target(ruby, value)?,
        None => grant.target.clone(),
    };
    let access = match access {
        Some(value) => parse_access(ruby, value)?,
        None => grant.access,
    };
    let narrowed = errors::core_result(ruby, grant.narrow(&target, access))?;
    Ok(vo::frozen_obj(ruby, Mount(narrowed), Mount::class(ruby)))
}
