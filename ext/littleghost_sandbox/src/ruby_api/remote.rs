//! `LittleGhost::Sandboxes::Remote` (`:remote`): a sandbox whose files and
//! programs are littleghost-sandboxd's, reached over sandboxd's protocol by
//! the core's client (`littleghost_sandbox_core::remote`). This file only
//! converts: Ruby arguments into the client's calls, its answers and
//! errors back (docs/design.md "The remote provider"). Every wait runs
//! without the GVL, in slices, checking Ruby's interrupts and the context
//! between them; an interrupted call is dropped, and the daemon ends what it
//! started for it.

use littleghost_sandbox_core::remote::{self, client::Command, client::Narrowing, Client, Launch};
use magnus::{
    method, prelude::*, scan_args::scan_args, DataTypeFunctions, Error, RArray, RHash, RModule,
    RString, Ruby, TypedData, Value,
};

use crate::helpers::args::{command_call, keywords, keywords_only};
use crate::helpers::{constants, convert, errors};
use crate::ruby_api::execution::Execution;
use crate::ruby_api::network_policy::Declared;
use crate::ruby_api::process_runner::{check_context, validate_output_bytes, validate_timeout};
use crate::ruby_api::sandbox::{self, SandboxObj};
use crate::ruby_api::{capabilities as reports, remote_session};

pub(crate) mod call;
pub(crate) use call::{follow, raised, wait};

/// The sandbox's connection (the core's: the client, the denial watch, the sessions it started).
#[derive(TypedData)]
#[magnus(
    class = "LittleGhost::Sandboxes::Remote::Connection",
    free_immediately,
    size
)]
pub(crate) struct Connection(remote::Connection);

impl DataTypeFunctions for Connection {}

fn connection(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static remote::Connection, Error> {
    sandbox::backend_state(ruby, rb_self, "remote").map(|state: &Connection| &state.0)
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
    let text = |string, what| convert::text(ruby, string, what);
    let token = Option::<RString>::try_convert(token)?;
    let token = token.map(|t| text(t, "remote token")).transpose()?;
    let grpc = text(grpc, "remote endpoint grpc")?;
    let rest = text(rest, "remote endpoint rest")?;
    let state = remote::Connection::new(&grpc, &rest, token.as_deref());
    let state = state.map_err(|e| raised(ruby, e))?;
    sandbox::set_backend(rb_self, ruby.obj_wrap(Connection(state)).as_value());
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
fn connected(ruby: &Ruby, rb_self: SandboxObj) -> Result<&'static remote::Connection, Error> {
    let state = connection(ruby, rb_self)?;
    wait(ruby, state.metadata(), None)?;
    if !state.watching() {
        let sandbox = sandbox::borrow(rb_self.as_value()).expect("a SandboxObj holds a Sandbox");
        let hub = sandbox.denials().hub();
        hub.expect_async(ruby);
        let watch = state.watch(move |denial| hub.record_async(denial));
        wait(ruby, watch, None)?;
    }
    Ok(state)
}

/// Ends every session this sandbox started (the daemon ends their
/// programs), stops the denial stream after delivering what arrived; nil.
fn close(ruby: &Ruby, rb_self: SandboxObj) -> Result<(), Error> {
    connection(ruby, rb_self)?.close();
    if let Some(sandbox) = sandbox::borrow(rb_self.as_value()) {
        sandbox.set_opened(false);
        sandbox.denials().hub().stop_delivery(ruby)?;
    }
    Ok(())
}

/// What the daemon enforces, from its metadata (docs/spec.md RM.6): what
/// it publishes, else what its `env` implies.
fn capabilities(ruby: &Ruby, rb_self: SandboxObj) -> Result<Value, Error> {
    let metadata = wait(ruby, connection(ruby, rb_self)?.metadata(), None)?;
    let report = errors::core_result(ruby, metadata.enforced().capabilities())?;
    Ok(reports::wrap(ruby, report))
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
    let enforced = wait(ruby, state.metadata(), None)?.enforced();
    let client = client_for(ruby, state, Some(scope))?;
    Ok(enforced.writable(client.narrowings()))
}

/// The client a call goes through: the sandbox's, narrowed by `scope:` (a
/// Remote::Scope, whose `narrowings` the core reads).
fn client_for(
    ruby: &Ruby,
    state: &remote::Connection,
    scope: Option<Value>,
) -> Result<Client, Error> {
    let Some(scope) = scope.filter(|scope| !scope.is_nil()) else {
        return Ok(state.client().clone());
    };
    let narrowings = Declared(ruby, scope.funcall("narrowings", ())?);
    let chain = Narrowing::chain(&narrowings, |error| raised(ruby, error))?;
    Ok(state.client().narrowed(chain))
}

/// `read(path)`, `list(path = ".")`, `write(path, content)`,
/// `replace(path, old_text, new_text)`, each with `context:` (and `scope:`,
/// from a Remote::Scope): the daemon's broker decides (docs/spec.md §14).
fn file<const OP: usize>(
    ruby: &Ruby,
    rb_self: SandboxObj,
    args: &[Value],
) -> Result<String, Error> {
    let args = scan_args::<(), (), RArray, (), RHash, ()>(args)?;
    let given = args.splat;
    ruby.check_arity(given.len(), [1..=1, 0..=1, 2..=2, 3..=3][OP].clone())?;
    let options = keywords(ruby, args.keywords, &[], &["context", "scope"])?;
    check_context(options[0])?;
    let path = match given.entry::<Option<Value>>(0)? {
        Some(path) => convert::lossy(convert::path_string(ruby, path, "path")?),
        None => ".".to_string(),
    };
    let text = |index| Ok::<_, Error>(convert::bytes(given.entry(index)?));
    let state = connected(ruby, rb_self)?;
    let client = client_for(ruby, state, options[1])?;
    let pending = match OP {
        0 => client.read(path),
        1 => client.list(path),
        2 => client.write(path, text(1)?),
        _ => state.replace(&client, path, text(1)?, text(2)?),
    };
    wait(ruby, pending, options[0])
}

/// A launch's keywords checked (the core refuses what the daemon's
/// protocol cannot carry), as the command, the context, the client of its
/// scope, and a run's timeout and output bound (17.9).
struct Call {
    command: Command,
    context: Option<Value>,
    client: Client,
    timeout: f64,
    bound: u64,
}

fn launch(ruby: &Ruby, rb_self: SandboxObj, args: &[Value], kind: Launch) -> Result<Call, Error> {
    let (required, optional) = (kind.required(), kind.optional());
    let (command, values) = command_call(ruby, args, required, &optional)?;
    let names = [required, &optional].concat();
    let given = |name: &str| values[names.iter().position(|n| *n == name)?].filter(|v| !v.is_nil());
    let timeout = match kind {
        Launch::Run => validate_timeout(ruby, values[0].expect("required"))?,
        Launch::Session => 0.0,
    };
    kind.refuse_uncarried(|name| given(name).map(|v| v.to_bool()))
        .map_err(|error| raised(ruby, error))?;
    let limits = crate::ruby_api::limits::borrow(sandbox::limits_of(ruby, rb_self.as_value()));
    let default_bytes = limits.map_or(1_000_000, |l| l.output_bytes);
    let bound = match (kind, given("max_output_bytes")) {
        (Launch::Run, Some(value)) => validate_output_bytes(ruby, value, default_bytes)?,
        _ => default_bytes,
    };
    let cwd = given("cwd").map(|cwd| convert::path_string(ruby, cwd, "cwd"));
    let cwd = cwd.transpose()?.map(convert::lossy);
    let command = Command {
        argv: convert::argv(ruby, command)?,
        environment: convert::environment(ruby, given("environment"))?,
        cwd,
    };
    let context = given("context");
    check_context(context)?;
    let client = client_for(ruby, connected(ruby, rb_self)?, given("scope"))?;
    Ok(Call {
        command,
        context,
        client,
        timeout,
        bound,
    })
}

/// `execute_program(command, timeout:, context: nil, max_output_bytes: nil,
/// environment: {}, cwd: nil, scope: nil)` → Execution: the daemon runs it
/// confined and ends it at the timeout (ToolError "Command timed out after
/// T seconds"); each stream is cut at `max_output_bytes` (17.9). With a
/// block, the run is a `Start` streamed as it is printed (`:stdout` or
/// `:stderr` and a frozen binary String a chunk, within the bound), its
/// Execution the same as without one.
fn execute_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let call = launch(ruby, rb_self, args, Launch::Run)?;
    let (client, context) = (&call.client, call.context);
    // block_given? first: `block_proc` without a block raises (see process_runner::run).
    let execution = match ruby.block_given() {
        true => {
            let block = ruby.block_proc()?;
            let names = [ruby.to_symbol("stdout"), ruby.to_symbol("stderr")];
            let started = client.run_streamed(call.command, call.timeout, call.bound);
            follow(
                ruby,
                wait(ruby, started, context)?,
                context,
                |stream, bytes| {
                    // As a local run yields: a frozen binary String a chunk.
                    let chunk = ruby.str_from_slice(&bytes);
                    chunk.freeze();
                    block.call::<_, Value>((names[stream], chunk)).map(|_| ())
                },
            )?
        }
        false => wait(ruby, client.execute(call.command, call.timeout), context)?,
    };
    let ((stdout, stderr), code) = (execution.bounded(call.bound), execution.exit_code);
    Ok(Execution::wrap(ruby, &stdout, &stderr, Some(code), None))
}

/// `start_program(command, context: nil, environment: {}, cwd: nil, scope: nil)`
/// → Remote::Session, owned by this sandbox (`close` ends it).
fn start_program(ruby: &Ruby, rb_self: SandboxObj, args: &[Value]) -> Result<Value, Error> {
    let call = launch(ruby, rb_self, args, Launch::Session)?;
    let session = wait(ruby, call.client.start(call.command), call.context)?;
    let state = connection(ruby, rb_self)?;
    Ok(remote_session::wrap(ruby, state.own(session)))
}
