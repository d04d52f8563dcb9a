//! `LittleGhost::Sandboxes::Remote` (`:remote`): a sandbox whose files and
//! programs are littleghost-sandboxd's, reached over sandboxd's protocol by
//! the core's client (`littleghost_sandbox_core::remote`). This file only
//! converts: Ruby arguments into the client's calls, its answers and
//! errors back (docs/design.md "The remote provider"). Every wait runs
//! without the GVL, in slices, checking Ruby's interrupts and the context
//! between them; an interrupted call is dropped, and the daemon ends what it
//! started for it.

use std::sync::{Arc, Mutex, Weak};

use littleghost_sandbox_core::process::TRUNCATION_MARKER;
use littleghost_sandbox_core::remote::{self, client::Command, Client, Endpoint};
use magnus::{
    method, prelude::*, scan_args::scan_args, DataTypeFunctions, Error, RArray, RHash, RModule,
    RString, Ruby, TypedData, Value,
};

use crate::helpers::args::{keywords, keywords_only};
use crate::helpers::errors;
use crate::helpers::{constants, convert};
use crate::ruby_api::process_runner::{check_context, validate_output_bytes, validate_timeout};
use crate::ruby_api::remote_session;
use crate::ruby_api::sandbox::{self, SandboxObj};

pub(crate) mod call;
pub(crate) use call::{follow, raised, wait};

/// The sandbox's connection: the client, the denial watch and the sessions it started.
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Remote::Connection",
    free_immediately,
    size
)]
pub(crate) struct Connection {
    client: Client,
    watch: Mutex<Option<remote::Watch>>,
    metadata: Mutex<Option<remote::Metadata>>,
    sessions: Mutex<Vec<Weak<remote::Session>>>,
}

impl DataTypeFunctions for Connection {}

fn connection(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static Connection, Error> {
    sandbox::backend_state(ruby, rb_self, "remote")
}

pub fn init(ruby: &Ruby, little_ghost: RModule) -> Result<(), Error> {
    let sandboxes: RModule = little_ghost.const_get("Sandboxes")?;
    let class =
        sandboxes.define_class("Remote", constants::class(ruby, "LittleGhost::Sandbox")?)?;
    let state = class.define_class("Connection", ruby.class_object())?;
    state.undef_default_alloc_func();
    class.define_private_method("connect", method!(connect, 3))?;
    class.define_method("open", method!(open, -1))?;
    class.define_method("close", method!(close, 0))?;
    class.define_method("capabilities", method!(capabilities, 0))?;
    class.define_private_method("scoped_allows?", method!(scoped_allows, 3))?;
    class.define_private_method("scoped_writable?", method!(scoped_writable, 1))?;
    class.define_method("read", method!(file::<0>, -1))?;
    class.define_method("list", method!(file::<1>, -1))?;
    class.define_method("write", method!(file::<2>, -1))?;
    class.define_method("replace", method!(file::<3>, -1))?;
    class.define_method("execute_program", method!(execute_program, -1))?;
    class.define_method("start_program", method!(start_program, -1))?;
    remote_session::init(ruby, class)?;
    Ok(())
}

/// `connect(grpc, rest, token)`, from `initialize` (lib/littleghost/sandbox/remote.rb):
/// checks the endpoint and keeps the client; nothing is sent yet.
fn connect(
    ruby: &Ruby,
    rb_self: SandboxObj,
    grpc: RString,
    rest: RString,
    token: Value,
) -> Result<(), Error> {
    let token = match Option::<RString>::try_convert(token)? {
        Some(token) => Some(convert::text(ruby, token, "remote token")?),
        None => None,
    };
    let grpc = convert::text(ruby, grpc, "remote endpoint grpc")?;
    let rest = convert::text(ruby, rest, "remote endpoint rest")?;
    let endpoint = Endpoint::new(&grpc, &rest, token.as_deref()).map_err(|e| raised(ruby, e))?;
    let client = Client::new(endpoint).map_err(|e| raised(ruby, e))?;
    let state = Connection {
        client,
        watch: Mutex::new(None),
        metadata: Mutex::new(None),
        sessions: Mutex::new(Vec::new()),
    };
    sandbox::set_backend(rb_self, ruby.obj_wrap(state).as_value());
    Ok(())
}

/// Reaches the daemon (its metadata: the address and the token work) and
/// starts streaming its denials into `denials`/`on_denial`; returns self, or
/// with a block yields self, always closes and returns the block's value.
fn open(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    keywords(ruby, keywords_only(args)?, &[], &["run"])?;
    connected(ruby, rb_self)?;
    crate::ruby_api::ownership::yield_and_close(ruby, rb_self.as_value())
}

/// What `open` does, once; every operation calls it first, so a sandbox
/// never opened still reports its denials.
fn connected(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static Connection, Error> {
    let state = connection(ruby, rb_self)?;
    metadata(ruby, state)?;
    if state
        .watch
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_some()
    {
        return Ok(state);
    }
    let hub = sandbox::borrow(rb_self.as_value())
        .expect("a SandboxObj holds a Sandbox")
        .denials()
        .hub();
    hub.expect_async(ruby);
    let sink = hub.clone();
    let watch = wait(
        ruby,
        state
            .client
            .watch_denials(move |denial| sink.record_async(denial)),
        None,
    )?;
    let mut slot = state.watch.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        *slot = Some(watch);
    }
    Ok(state)
}

/// The daemon's `/v1/metadata`, fetched once.
fn metadata(ruby: &Ruby, state: &Connection) -> Result<remote::Metadata, Error> {
    if let Some(known) = state
        .metadata
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
    {
        return Ok(known);
    }
    let fetched = wait(ruby, state.client.metadata(), None)?;
    *state.metadata.lock().unwrap_or_else(|p| p.into_inner()) = Some(fetched.clone());
    Ok(fetched)
}

/// Ends every session this sandbox started (the daemon ends their
/// programs), stops the denial stream after delivering what arrived; nil.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    let state = connection(ruby, rb_self)?;
    let sessions = std::mem::take(&mut *state.sessions.lock().unwrap_or_else(|p| p.into_inner()));
    sessions
        .iter()
        .filter_map(Weak::upgrade)
        .for_each(|session| session.end());
    state.watch.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(sandbox) = sandbox::borrow(rb_self.as_value()) {
        sandbox.set_opened(false);
        sandbox.denials().hub().stop_delivery(ruby)?;
    }
    Ok(())
}

/// What the daemon enforces, from its metadata (docs/spec.md RM.6): what
/// it publishes, else what its `env` implies.
fn capabilities(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    let metadata = metadata(ruby, connection(ruby, rb_self)?)?;
    let view = metadata.enforced();
    let symbols = |names: &[String]| -> RArray {
        let array = ruby.ary_new();
        names.iter().for_each(|name| {
            let _ = array.push(ruby.to_symbol(name));
        });
        array
    };
    let options = ruby.hash_new();
    options.aset(ruby.to_symbol("features"), symbols(&view.features))?;
    options.aset(
        ruby.to_symbol("network_modes"),
        symbols(std::slice::from_ref(&view.network)),
    )?;
    options.aset(ruby.to_symbol("isolation"), ruby.to_symbol(&view.isolation))?;
    let class = constants::class(ruby, "LittleGhost::Sandbox::Capabilities")?;
    class.funcall("new", (magnus::KwArgs(options),))
}

/// `scoped_allows?(feature, path, scope)`, from Remote::Scope#allows?: the
/// daemon's broker answers for the canonical `feature` on `path` under the
/// scope's narrowings (docs/spec.md SC.13).
fn scoped_allows(
    ruby: &Ruby,
    rb_self: SandboxObj,
    feature: RString,
    path: Value,
    scope: Value,
) -> Result<bool, Error> {
    let feature = convert::text(ruby, feature, "feature")?;
    let path = convert::lossy(convert::path_string(ruby, path, "path")?);
    let state = connected(ruby, rb_self)?;
    let client = client_for(ruby, state, Some(scope))?;
    wait(ruby, client.allows(feature, path), None)
}

/// `scoped_writable?(scope)`, from Remote#writable? and
/// Remote::Scope#writable?: the daemon's published grants, as the scope
/// (nil: none) narrows them (docs/spec.md SC.11).
fn scoped_writable(ruby: &Ruby, rb_self: SandboxObj, scope: Value) -> Result<bool, Error> {
    let state = connection(ruby, rb_self)?;
    let enforced = metadata(ruby, state)?.enforced();
    let client = client_for(ruby, state, Some(scope))?;
    Ok(enforced.writable(client.narrowings()))
}

/// The client a call goes through: the sandbox's, narrowed by `scope:` (a
/// Remote::Scope, whose `narrowings` are Hashes of `files:`,
/// `capabilities:`, `network:`).
fn client_for(ruby: &Ruby, state: &Connection, scope: Option<Value>) -> Result<Client, Error> {
    let Some(scope) = scope.filter(|scope| !scope.is_nil()) else {
        return Ok(state.client.clone());
    };
    let narrowings: RArray = scope.funcall("narrowings", ())?;
    let mut client = state.client.clone();
    for narrowing in narrowings.into_iter() {
        let narrowing = RHash::try_convert(narrowing)?;
        let text = |value: Value| -> Result<String, Error> {
            value.funcall::<_, _, RString>("to_s", ())?.to_string()
        };
        let files = match narrowing
            .get(ruby.to_symbol("files"))
            .filter(|v| !v.is_nil())
        {
            None => None,
            Some(files) => {
                let mut grants = Vec::new();
                RHash::try_convert(files)?.foreach(|name: Value, access: Value| {
                    grants.push((text(name)?, text(access)?));
                    Ok(magnus::r_hash::ForEach::Continue)
                })?;
                Some(grants)
            }
        };
        let capabilities = match narrowing
            .get(ruby.to_symbol("capabilities"))
            .filter(|v| !v.is_nil())
        {
            None => None,
            Some(list) => Some(
                RArray::try_convert(list)?
                    .into_iter()
                    .map(text)
                    .collect::<Result<_, _>>()?,
            ),
        };
        let network = match narrowing
            .get(ruby.to_symbol("network"))
            .filter(|v| !v.is_nil())
        {
            None => None,
            Some(mode) => Some(text(mode)?),
        };
        client = client.narrowed(remote::client::Narrowing {
            files,
            capabilities,
            network,
        });
    }
    Ok(client)
}

/// `read(path)`, `list(path = ".")`, `write(path, content)`,
/// `replace(path, old_text, new_text)`, each with `context:` (and `scope:`,
/// from a Remote::Scope): the daemon's broker decides (docs/spec.md §14).
fn file<const OP: usize>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<String, Error> {
    let args =
        scan_args::<(), (Option<Value>, Option<Value>, Option<Value>), (), (), RHash, ()>(args)?;
    let given = [args.optional.0, args.optional.1, args.optional.2];
    let needed = [1, 0, 2, 3][OP];
    let count = given.iter().flatten().count();
    if count < needed.max(usize::from(OP != 1)) || count > needed.max(1) {
        return Err(errors::argument_error(
            ruby,
            format!(
                "wrong number of arguments (given {count}, expected {})",
                if OP == 1 {
                    "0..1".into()
                } else {
                    needed.to_string()
                }
            ),
        ));
    }
    let options = keywords(ruby, args.keywords, &[], &["context", "scope"])?;
    let context = options[0];
    check_context(context)?;
    let path = match given[0] {
        Some(path) => convert::lossy(convert::path_string(ruby, path, "path")?),
        None => ".".to_string(),
    };
    let text = |index: usize| -> Result<Vec<u8>, Error> {
        Ok(convert::bytes(RString::try_convert(
            given[index].expect("counted"),
        )?))
    };
    let state = connected(ruby, rb_self)?;
    let client = client_for(ruby, state, options[1])?;
    let pending = match OP {
        0 => client.read(path),
        1 => client.list(path),
        2 => client.write(path, text(1)?),
        _ => {
            let metadata = metadata(ruby, state)?;
            metadata
                .require_atomic_replace()
                .map_err(|error| raised(ruby, error))?;
            client.replace(path, text(1)?, text(2)?)
        }
    };
    wait(ruby, pending, context)
}

/// The keywords a local launch takes that the daemon's protocol cannot
/// carry: given (not nil), they raise CapabilityError rather than being
/// dropped (docs/spec.md 10.3); the daemon's `--policy` sets its limits.
const NOT_CARRIED: [&str; 7] = [
    "output_bytes",
    "kill_on_output_limit",
    "allow_subprocesses",
    "memory_bytes",
    "tasks",
    "cpu_seconds",
    "file_bytes",
];

fn refuse_not_carried(ruby: &Ruby, values: &[Option<Value>]) -> Result<(), Error> {
    for (name, value) in NOT_CARRIED.iter().zip(values) {
        if value.is_some_and(|v| !v.is_nil() && !v.equal(ruby.qfalse()).unwrap_or(false)) {
            return Err(raised(
                ruby,
                remote::Error::Unsupported(format!(
                    "the remote provider cannot set {name}: per call; littleghost-sandboxd applies its --policy's process_limits"
                )),
            ));
        }
    }
    Ok(())
}

/// The argv, environment and working directory of a call.
fn command(
    ruby: &Ruby,
    command: Value,
    environment: Option<Value>,
    inherit: Option<Value>,
    cwd: Option<Value>,
) -> Result<Command, Error> {
    if inherit.is_some_and(|v| v.to_bool()) {
        return Err(raised(
            ruby,
            remote::Error::Unsupported("the remote provider cannot inherit this process's environment: the program runs on the daemon's host".into()),
        ));
    }
    let cwd = match cwd.filter(|v| !v.is_nil()) {
        Some(cwd) => Some(convert::lossy(convert::path_string(ruby, cwd, "cwd")?)),
        None => None,
    };
    Ok(Command {
        argv: convert::argv(ruby, command)?,
        environment: convert::environment(ruby, environment)?,
        cwd,
    })
}

const EXECUTE_OPTIONS: [&str; 7] = [
    "context",
    "max_output_bytes",
    "environment",
    "inherit_environment",
    "scope",
    "cwd",
    "timeout",
];

fn all_options<'a>(own: &'a [&'a str]) -> Vec<&'a str> {
    own.iter().chain(NOT_CARRIED.iter()).copied().collect()
}

/// `execute_program(command, timeout:, context: nil, max_output_bytes: nil,
/// environment: {}, cwd: nil, scope: nil)` → Execution: the daemon runs it
/// confined and ends it at the timeout (ToolError "Command timed out after
/// T seconds"); each stream is cut at `max_output_bytes` (17.9). With a
/// block, the run is a `Start` streamed as it is printed (`:stdout` or
/// `:stderr` and a frozen binary String a chunk, within the bound), its
/// Execution the same as without one.
fn execute_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    let names = all_options(&EXECUTE_OPTIONS[..6]);
    let values = keywords(ruby, args.keywords, &["timeout"], &names)?;
    let timeout = validate_timeout(ruby, values[0].expect("required"))?;
    let (context, max_output, environment, inherit, scope, cwd) = (
        values[1], values[2], values[3], values[4], values[5], values[6],
    );
    refuse_not_carried(ruby, &values[7..])?;
    let limits = sandbox::limits_of(ruby, rb_self.as_value());
    let default_bytes =
        crate::ruby_api::limits::borrow(limits).map_or(1_000_000, |l| l.output_bytes);
    let max_output = match max_output.filter(|v| !v.is_nil()) {
        Some(value) => validate_output_bytes(ruby, value, default_bytes)?,
        None => default_bytes,
    };
    let command = command(ruby, args.required.0, environment, inherit, cwd)?;
    check_context(context)?;
    let state = connected(ruby, rb_self)?;
    let client = client_for(ruby, state, scope)?;
    let bound = usize::try_from(max_output).unwrap_or(usize::MAX);
    // block_given? first: `block_proc` without a block raises (see process_runner::run).
    let execution = match ruby.block_given() {
        true => {
            let block = ruby.block_proc()?;
            let names = [ruby.to_symbol("stdout"), ruby.to_symbol("stderr")];
            let run = wait(ruby, client.run_streamed(command, timeout, bound), context)?;
            follow(ruby, run, context, |stream, bytes| {
                // As a local run yields: a frozen binary String a chunk.
                let chunk = ruby.str_from_slice(&bytes);
                chunk.freeze();
                block.call::<_, Value>((names[stream], chunk)).map(|_| ())
            })?
        }
        false => wait(ruby, client.execute(command, timeout), context)?,
    };
    let stdout = bounded(&execution.stdout, bound);
    let stderr = bounded(&execution.stderr, bound);
    Ok(crate::ruby_api::execution::Execution::wrap(
        ruby,
        &stdout,
        &stderr,
        Some(execution.exit_code),
        None,
    ))
}

/// 17.9: at most `limit` bytes, scrubbed UTF-8, and the marker if any were dropped.
fn bounded(bytes: &[u8], limit: usize) -> String {
    if bytes.len() <= limit {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut text = String::from_utf8_lossy(&bytes[..limit]).into_owned();
    text.push_str(TRUNCATION_MARKER);
    text
}

/// `start_program(command, context: nil, environment: {}, cwd: nil, scope: nil)`
/// → Remote::Session, owned by this sandbox (`close` ends it).
fn start_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let args = scan_args::<(Value,), (), (), (), RHash, ()>(args)?;
    let names = all_options(&EXECUTE_OPTIONS);
    let values = keywords(ruby, args.keywords, &[], &names)?;
    let (context, max_output, environment, inherit, scope, cwd, timeout) = (
        values[0], values[1], values[2], values[3], values[4], values[5], values[6],
    );
    refuse_not_carried(ruby, &values[7..])?;
    if max_output.is_some_and(|v| !v.is_nil()) || timeout.is_some_and(|v| !v.is_nil()) {
        return Err(raised(
            ruby,
            remote::Error::Unsupported("the remote provider's sessions take no max_output_bytes: or timeout:; wait(timeout:) bounds a wait".into()),
        ));
    }
    let command = command(ruby, args.required.0, environment, inherit, cwd)?;
    check_context(context)?;
    let state = connected(ruby, rb_self)?;
    let client = client_for(ruby, state, scope)?;
    let session = Arc::new(wait(ruby, client.start(command), context)?);
    let mut sessions = state.sessions.lock().unwrap_or_else(|p| p.into_inner());
    sessions.retain(|known| known.strong_count() > 0);
    sessions.push(Arc::downgrade(&session));
    drop(sessions);
    Ok(remote_session::wrap(ruby, session))
}
