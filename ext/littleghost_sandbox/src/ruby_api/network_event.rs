//! `LittleGhost::Sandbox::NetworkEvent` and the egress record of a sandbox:
//! `sandbox.network_log`, `sandbox.on_network { |event| }`
//! and `off_network(handler)`. The events are the core's
//! [`EgressEvent`]s, made on the built-in gateway's threads (one per tunnel
//! and per HTTP request, allowed or refused); the gateway records them in
//! the sandbox's [`NetworkHub`] without the GVL and the sandbox's event
//! thread calls the subscribers, in order, exactly as for gateway denials
//! (the same [`crate::helpers::event_hub`] machinery).
//!
//! The request's method is read with `http_method`: a reader named `method`
//! would shadow `Object#method`, which Ruby code (RSpec, `method(:x)`,
//! debuggers) relies on. `to_h` keeps the key `:method`, the name callers expect.

pub mod hub;

use littleghost_sandbox_core::denial::Reason;
use magnus::{
    method, prelude::*, Error, IntoValue, RArray, RClass, RHash, RString, Ruby, Symbol, Value,
};

pub(crate) use hub::list;
pub use hub::{NetworkEvent, NetworkHub};

use crate::helpers::errors;
use crate::helpers::value_object as vo;
use crate::ruby_api::sandbox::state::{self, SandboxObj};

pub fn init(ruby: &Ruby, sandbox: RClass) -> Result<(), Error> {
    let class = sandbox.define_class("NetworkEvent", ruby.class_object())?;
    class.undef_default_alloc_func();
    let _: Value = class.funcall("private_class_method", (ruby.to_symbol("new"),))?;
    class.define_method("destination", method!(destination, 0))?;
    class.define_method("http_method", method!(http_method, 0))?;
    class.define_method("path", method!(path, 0))?;
    class.define_method("status", method!(status, 0))?;
    class.define_method("bytes_sent", method!(bytes_sent, 0))?;
    class.define_method("bytes_received", method!(bytes_received, 0))?;
    class.define_method("duration", method!(duration, 0))?;
    class.define_method("decision", method!(decision, 0))?;
    class.define_method("reason", method!(reason, 0))?;
    class.define_method("detail", method!(detail, 0))?;
    class.define_method("inspected", method!(inspected, 0))?;
    class.define_method("inspected?", method!(inspected, 0))?;
    class.define_method("time", method!(time, 0))?;
    class.define_method("to_h", method!(to_h, 0))?;
    class.define_method("==", method!(equal, 1))?;
    class.define_method("eql?", method!(equal, 1))?;
    class.define_method("hash", method!(hash, 0))?;
    class.define_method("inspect", method!(inspect, 0))?;
    class.define_method("to_s", method!(inspect, 0))?;
    sandbox.define_method("on_network", method!(on_network, 0))?;
    sandbox.define_method("off_network", method!(off_network, 1))?;
    sandbox.define_method("network_log", method!(network_log, 0))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Sandbox methods.

fn hub_of(ruby: &Ruby, rb_self: SandboxObj) -> Result<std::sync::Arc<NetworkHub>, Error> {
    state::borrow(rb_self.as_value())
        .map(|state| state.network().hub())
        .ok_or_else(|| errors::type_error(ruby, "not a LittleGhost::Sandbox"))
}

/// on_network { |event| ... } -> the block (a Proc), the handle for off_network.
fn on_network(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    hub_of(ruby, rb_self)?.subscribe(ruby)
}

/// off_network(handler) -> true if `handler` was subscribed (and no longer is), else false.
fn off_network(ruby: &Ruby, rb_self: SandboxObj, handler: Value) -> Result<bool, Error> {
    hub_of(ruby, rb_self)?.unsubscribe(ruby, handler)
}

/// network_log -> frozen Array of the last (up to 100) NetworkEvents, oldest first.
fn network_log(ruby: &Ruby, rb_self: SandboxObj) -> Result<RArray, Error> {
    hub_of(ruby, rb_self)?.to_ruby(ruby)
}

// ---------------------------------------------------------------------------
// NetworkEvent methods.

fn destination(ruby: &Ruby, rb_self: &NetworkEvent) -> RString {
    vo::frozen_str(ruby, &rb_self.0.destination)
}

/// `"GET"`, `"CONNECT"` for a tunnel, or nil when the request was not read.
fn http_method(ruby: &Ruby, rb_self: &NetworkEvent) -> Option<RString> {
    rb_self.0.method.as_deref().map(|m| vo::frozen_str(ruby, m))
}

/// The origin-form path when the request was read (plain HTTP, inspected HTTPS), else nil.
fn path(ruby: &Ruby, rb_self: &NetworkEvent) -> Option<RString> {
    rb_self.0.path.as_deref().map(|p| vo::frozen_str(ruby, p))
}

fn status(rb_self: &NetworkEvent) -> Option<u16> {
    rb_self.0.status
}

fn bytes_sent(rb_self: &NetworkEvent) -> u64 {
    rb_self.0.bytes_sent
}

fn bytes_received(rb_self: &NetworkEvent) -> u64 {
    rb_self.0.bytes_received
}

/// Seconds, as a Float.
fn duration(rb_self: &NetworkEvent) -> f64 {
    rb_self.0.duration.as_secs_f64()
}

fn decision(ruby: &Ruby, rb_self: &NetworkEvent) -> Symbol {
    ruby.to_symbol(rb_self.0.decision.name())
}

/// Why the gateway refused it (its denial's reason, `:upstream_certificate`...), or nil.
fn reason(ruby: &Ruby, rb_self: &NetworkEvent) -> Option<Symbol> {
    rb_self
        .0
        .reason
        .map(|r| ruby.to_symbol(Reason::from(r).name()))
}

/// The upstream's words for a failed destination, or a malformed head's parse error; else nil.
fn detail(ruby: &Ruby, rb_self: &NetworkEvent) -> Option<RString> {
    rb_self.0.detail.as_deref().map(|d| vo::frozen_str(ruby, d))
}

fn inspected(rb_self: &NetworkEvent) -> bool {
    rb_self.0.inspected
}

fn time(ruby: &Ruby, rb_self: &NetworkEvent) -> Value {
    let time: Value = rb_self.0.at.into_value_with(ruby);
    time.freeze();
    time
}

/// The fields, `method` under that key (see the module docs).
fn to_h(ruby: &Ruby, rb_self: &NetworkEvent) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    let set = |key: &str, value: Value| hash.aset(ruby.to_symbol(key), value);
    set("destination", destination(ruby, rb_self).as_value())?;
    set("method", http_method(ruby, rb_self).into_value_with(ruby))?;
    set("path", path(ruby, rb_self).into_value_with(ruby))?;
    set("status", status(rb_self).into_value_with(ruby))?;
    set("bytes_sent", bytes_sent(rb_self).into_value_with(ruby))?;
    set(
        "bytes_received",
        bytes_received(rb_self).into_value_with(ruby),
    )?;
    set("duration", duration(rb_self).into_value_with(ruby))?;
    set("decision", decision(ruby, rb_self).as_value())?;
    set("reason", reason(ruby, rb_self).into_value_with(ruby))?;
    set("detail", detail(ruby, rb_self).into_value_with(ruby))?;
    set("inspected", inspected(rb_self).into_value_with(ruby))?;
    set("time", time(ruby, rb_self))?;
    Ok(hash)
}

fn equal(rb_self: &NetworkEvent, other: Value) -> bool {
    <&NetworkEvent>::try_convert(other).is_ok_and(|other| other.0 == rb_self.0)
}

fn hash(rb_self: &NetworkEvent) -> i64 {
    vo::hash_code(&rb_self.0)
}

/// `#<LittleGhost::Sandbox::NetworkEvent allowed GET "example.com:80" "/a" 200 sent=0 received=512 0.012s>`
/// (the core's one-line Display, wrapped).
fn inspect(rb_self: &NetworkEvent) -> String {
    format!("#<LittleGhost::Sandbox::NetworkEvent {}>", rb_self.0)
}
