//! The gateway's memory budget holds for what it really allocates: the heap
//! of this process (the gateway's) is counted by a global allocator, and a
//! child opening downloads it never reads may make it grow by about the
//! budget, not by what each upstream's HTTP client buffers beside it
//! (docs/design.md "The gateway's memory budget").

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use littleghost_sandbox_core::network::{Allowlist, DenialReason, Gateway, GatewayConfig};

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only the count is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A destination answering every request with an endless body, written
/// from one static buffer (so it allocates nothing per write).
fn endless_server() -> u16 {
    static CHUNK: [u8; 64 * 1024] = [b'x'; 64 * 1024];
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head);
                let _ =
                    stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n");
                while stream.write_all(&CHUNK).is_ok() {}
            });
        }
    });
    port
}

/// Invariant: with downloads the child never reads, the gateway's heap
/// grows by at most its memory budget plus a little per connection (its
/// task, hyper's connection state, the head maps), and the downloads the
/// budget has no room for get 503 and a `memory_budget` denial. Were the
/// HTTP client's read buffers outside the budget, 40 stalled downloads
/// would hold several times the budget.
#[test]
fn unread_downloads_hold_no_more_heap_than_the_budget_says() {
    const BUDGET: usize = 4 << 20;
    const DOWNLOADS: usize = 40;
    /// What a connection holds besides its buffers (measured: under 20 KiB).
    const PER_CONNECTION: usize = 48 << 10;
    let port = endless_server();
    let allowlist = Allowlist::new(&[format!("127.0.0.1:{port}")], true).unwrap();
    let mut config = GatewayConfig::new(allowlist);
    config.memory_budget = BUDGET;
    let gateway = Gateway::start(config).unwrap();
    let before = LIVE.load(Ordering::Relaxed);
    let mut held = Vec::new();
    let (mut served, mut refused) = (0, 0);
    for _ in 0..DOWNLOADS {
        let mut child = UnixStream::connect(gateway.socket_path()).unwrap();
        child
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let request = format!("GET http://127.0.0.1:{port}/big HTTP/1.1\r\nHost: x\r\n\r\n");
        let _ = child.write_all(request.as_bytes());
        // The status line only; nothing of the body is ever read.
        let mut status = [0u8; 12];
        child.read_exact(&mut status).unwrap();
        match &status {
            b"HTTP/1.1 200" => served += 1,
            b"HTTP/1.1 503" => refused += 1,
            other => panic!("{:?}", String::from_utf8_lossy(other)),
        }
        held.push(child);
    }
    // The buffers of the last downloads fill after their status line: the most seen over a while.
    let mut grown = 0;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(100));
        grown = grown.max(LIVE.load(Ordering::Relaxed).saturating_sub(before));
    }
    eprintln!(
        "{served} served, {refused} refused; the heap grew by {} KiB ({} KiB per served download)",
        grown >> 10,
        (grown / served.max(1)) >> 10
    );
    let allowed = BUDGET + DOWNLOADS * PER_CONNECTION;
    assert!(
        grown <= allowed,
        "the heap grew by {} KiB for {served} served downloads ({} KiB each), more than the budget ({} KiB) and {} KiB per connection",
        grown >> 10,
        (grown / served.max(1)) >> 10,
        BUDGET >> 10,
        PER_CONNECTION >> 10
    );
    assert!(
        served > 0 && refused > 0,
        "{served} served, {refused} refused"
    );
    assert!(
        gateway
            .denials()
            .iter()
            .all(|denial| denial.reason == DenialReason::MemoryBudget),
        "{:?}",
        gateway.denials()
    );
    drop(held);
}
