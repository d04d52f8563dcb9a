//! How a Scope narrows its parent (SC.3, SC.9, SC.10): converts the Ruby
//! keywords and hands them to the core's narrowing rules.

use std::path::PathBuf;

use littleghost_sandbox_core::scope::{
    self as core_scope, NetworkChoice, NetworkMode, NetworkRequest, Request,
};
use magnus::{prelude::*, Error, KwArgs, RArray, RString, Ruby, Symbol, Value};

use crate::helpers::args::kwargs;
use crate::helpers::convert;
use crate::helpers::{constants, value_object as vo};
use crate::ruby_api::errors::{self, core_result};
use crate::ruby_api::mount::parse_access;
use crate::ruby_api::sandbox::truthy;
use crate::ruby_api::{capabilities, network_policy};

/// SC.3: nil keeps the category; a Hash, an Array of names or of `[name, access]` pairs replaces it.
pub(super) fn requests(
    ruby: &Ruby,
    workspace: Value,
    value: Option<Value>,
    category: &str,
) -> Result<Option<Vec<Request>>, Error> {
    let Some(value) = value else { return Ok(None) };
    let entries: RArray = if value.respond_to("each_pair", false)? {
        value.funcall("to_a", ())?
    } else if let Some(array) = RArray::from_value(value) {
        array
    } else {
        return Err(errors::policy_error(
            ruby,
            format!("sandbox scope {category} must be a Hash or an Array"),
        ));
    };
    let mut requests = Vec::new();
    for entry in entries {
        let (name, access) = match RArray::from_value(entry) {
            Some(pair) if pair.len() == 2 => {
                (pair.entry::<Value>(0)?, Some(pair.entry::<Value>(1)?))
            }
            Some(_) => {
                return Err(errors::policy_error(
                    ruby,
                    format!(
                        "sandbox scope {category} entries must be names or [name, access] pairs"
                    ),
                ))
            }
            None => (entry, None),
        };
        let access = access.map(|a| parse_access(ruby, a)).transpose()?;
        requests.push(Request::new(directory_of(ruby, workspace, name)?, access));
    }
    Ok(Some(requests))
}

/// The workspace directory a grant name stands for (8.5); unknown names raise KeyError.
pub(super) fn directory_of(ruby: &Ruby, workspace: Value, name: Value) -> Result<PathBuf, Error> {
    let name: Symbol = vo::name_to_sym(name, "sandbox scope grant name")?;
    let directory: Value = if name.name()? == "root" {
        workspace.funcall("root", ())?
    } else {
        workspace.funcall("path", (name,))?
    };
    let directory: RString = ruby.module_kernel().funcall("String", (directory,))?;
    Ok(convert::path_of(directory))
}

/// SC.9: nil keeps the parent's; a Capabilities intersects; an Array keeps the parent's features it names.
pub(super) fn narrow_capabilities(
    ruby: &Ruby,
    parent: Value,
    requested: Option<Value>,
) -> Result<Value, Error> {
    let class = constants::class(ruby, "LittleGhost::Sandbox::Capabilities")?;
    let Some(requested) = requested else {
        return Ok(parent);
    };
    if requested.is_kind_of(class) {
        return parent.funcall("intersect", (requested,));
    }
    let Some(list) = RArray::from_value(requested) else {
        return Err(errors::policy_error(
            ruby,
            "sandbox scope capabilities must be an Array or Sandbox::Capabilities",
        ));
    };
    let wanted = ruby.ary_new();
    for feature in list {
        wanted.push(class.funcall::<_, _, Value>("normalize", (feature,))?)?;
    }
    let parent_features: RArray = parent.funcall("features", ())?;
    let features: RArray = parent_features.funcall("&", (wanted,))?;
    let options = kwargs(
        ruby,
        &[
            ("features", features.as_value()),
            ("network_modes", parent.funcall("network_modes", ())?),
            ("isolation", parent.funcall("isolation", ())?),
        ],
    )?;
    class.funcall("new", (KwArgs(options),))
}

pub(super) fn with_network_modes(
    ruby: &Ruby,
    capabilities: Value,
    modes: &[&str],
) -> Result<Value, Error> {
    let class = constants::class(ruby, "LittleGhost::Sandbox::Capabilities")?;
    let modes = ruby.ary_from_iter(modes.iter().map(|m| ruby.to_symbol(m)));
    let options = kwargs(
        ruby,
        &[
            ("features", capabilities.funcall("features", ())?),
            ("network_modes", modes.as_value()),
            ("isolation", capabilities.funcall("isolation", ())?),
        ],
    )?;
    class.funcall("new", (KwArgs(options),))
}

fn mode_of(ruby: &Ruby, network: Value) -> Result<Option<NetworkMode>, Error> {
    if network.is_nil() {
        return Ok(None);
    }
    let network = network_policy::borrow(network)
        .ok_or_else(|| errors::type_error(ruby, "sandbox scope network must be a NetworkPolicy"))?;
    Ok(NetworkMode::parse(network.core().mode.name()))
}

/// SC.10/SC.10b: the scope's network and its mode; the table itself is the core's.
pub(super) fn narrow_network(
    ruby: &Ruby,
    parent_capabilities: Value,
    parent: Value,
    requested: Option<Value>,
) -> Result<(Value, Option<NetworkMode>), Error> {
    let coerced = match requested {
        None => None,
        Some(value) if value.is_nil() || value.equal(ruby.qtrue())? => None,
        Some(value) => {
            let class = constants::class(ruby, "LittleGhost::Sandbox::NetworkPolicy")?;
            let value = if value.equal(ruby.qfalse())? {
                ruby.to_symbol("none").as_value()
            } else {
                value
            };
            Some(class.funcall::<_, _, Value>("coerce", (value,))?)
        }
    };
    let request = match coerced {
        None => NetworkRequest::Parent,
        Some(policy) => {
            let Some(mode) = mode_of(ruby, policy)? else {
                return Err(errors::capability_error(
                    ruby,
                    "sandbox scope cannot widen network access",
                ));
            };
            let same_as_parent = !parent.is_nil() && truthy(policy.funcall("==", (parent,))?);
            NetworkRequest::Mode {
                mode,
                same_as_parent,
            }
        }
    };
    let supported: Vec<NetworkMode> = capabilities::borrow(parent_capabilities)
        .map(|c| {
            c.core()
                .network_modes
                .iter()
                .filter_map(|m| NetworkMode::parse(m.name()))
                .collect()
        })
        .unwrap_or_default();
    let (choice, mode) = core_result(
        ruby,
        core_scope::narrow_network(mode_of(ruby, parent)?, request, &supported),
    )?;
    let network = match (choice, coerced) {
        (NetworkChoice::Requested, Some(policy)) => policy,
        _ => parent,
    };
    Ok((network, mode))
}
