//! A pseudo-terminal for one launch: its slave is the program's stdin,
//! stdout, stderr and controlling terminal; the parent reads the program's
//! output from the master and writes its input there.
//!
//! The child leads a session of its own (`setsid`) and makes the slave its
//! controlling terminal (`TIOCSCTTY`) before it executes anything
//! ([`super::spawn`]). The terminal is made for that launch alone: the only
//! processes in its session are the launch's, so what a program pushes into
//! it with `TIOCSTI` it only reads back itself, never the host's terminal
//! (docs/security.md).
//!
//! The master is opened close-on-exec and never handed to the child, which
//! holds only the slave. Once the last copy of the slave is closed (the
//! program and everything it started ended) a read of the master fails with
//! EIO, which ends the output as EOF ends a pipe.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use rustix::pty::{grantpt, ioctl_tiocgptpeer, openpt, ptsname, unlockpt, OpenptFlags};
use rustix::termios::{tcgetattr, tcgetwinsize, tcsetwinsize, SpecialCodeIndex, Winsize};

/// A terminal's window, in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    pub cols: u16,
    pub rows: u16,
}

/// A pseudo-terminal pair made for one launch, before it is started.
pub struct Terminal {
    pub(crate) master: OwnedFd,
    pub(crate) slave: OwnedFd,
}

impl Terminal {
    /// Opens a new pseudo-terminal, sized `size` if given (else the kernel's
    /// 0 by 0). Both ends are close-on-exec and neither is this process's
    /// controlling terminal.
    pub fn open(size: Option<WindowSize>) -> io::Result<Terminal> {
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        let master = openpt(flags)?;
        grantpt(&master)?;
        unlockpt(&master)?;
        // TIOCGPTPEER opens the slave from the master, not by its name in
        // /dev/pts; kernels before 4.13 lack it.
        let slave = match ioctl_tiocgptpeer(&master, flags) {
            Ok(slave) => slave,
            Err(_) => {
                let name = ptsname(&master, Vec::new())?;
                rustix::fs::open(
                    name.as_c_str(),
                    rustix::fs::OFlags::RDWR
                        | rustix::fs::OFlags::NOCTTY
                        | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )?
            }
        };
        if let Some(size) = size {
            resize(&master, size)?;
        }
        Ok(Terminal { master, slave })
    }
}

/// Sets the window size of the terminal `master` belongs to (`TIOCSWINSZ`);
/// the kernel sends SIGWINCH to its foreground process group.
pub fn resize(master: impl AsFd, size: WindowSize) -> io::Result<()> {
    let window = Winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    tcsetwinsize(master, window).map_err(io::Error::from)
}

/// The window size of the terminal `fd` belongs to (`TIOCGWINSZ`).
pub fn window_size(fd: impl AsFd) -> io::Result<WindowSize> {
    let window = tcgetwinsize(fd)?;
    Ok(WindowSize {
        cols: window.ws_col,
        rows: window.ws_row,
    })
}

/// The byte that, typed at the start of a line, makes the program's read
/// return end of file (`VEOF`, usually Ctrl-D). A terminal has no end of
/// input to close: closing the master would hang the program up instead.
pub fn end_of_file(master: impl AsFd) -> io::Result<u8> {
    Ok(tcgetattr(master)?.special_codes[SpecialCodeIndex::VEOF])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{CaptureMode, Launch, ProcessLimits, RunningProcess, POLL_INTERVAL};
    use std::time::{Duration, Instant};

    /// What the program sees of its terminal, one fact a line.
    const LOOK_AROUND: &str = "test -t 0 && test -t 1 && test -t 2 && echo terminal; \
        stty size; \
        set -- $(cat /proc/$$/stat); test \"$7\" != 0 && test \"$6\" = $$ && echo controlling; \
        ls -l /proc/$$/fd/ | grep -q ptmx || echo no-master; \
        read line; echo got:$line";

    #[test]
    fn a_program_runs_on_the_terminal_which_controls_its_session_and_never_holds_the_master() {
        let launch = Launch {
            argv: strings(&["sh", "-c", LOOK_AROUND]),
            environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
            ..Launch::default()
        };
        let size = WindowSize { cols: 91, rows: 17 };
        let mode = CaptureMode::PerStream {
            limit: 1 << 20,
            stop_at_limit: false,
        };
        let terminal = Terminal::open(Some(size)).unwrap();
        let process = RunningProcess::start_on_terminal(
            &launch,
            &ProcessLimits::default(),
            mode,
            terminal,
            None,
        )
        .unwrap();
        let input = process.stdin().unwrap();
        crate::process::write_stdin(&input, b"hello\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !process.finished() {
            assert!(Instant::now() < deadline, "the program did not end");
            process.notifier().wait(POLL_INTERVAL, None);
            process.notifier().clear();
        }
        let [stdout, stderr] = process.output_since(&mut [0, 0]);
        let stdout = String::from_utf8_lossy(&stdout);
        for line in ["terminal", "17 91", "controlling", "no-master", "got:hello"] {
            assert!(
                stdout.contains(&format!("{line}\r\n")),
                "{line}: {stdout:?}"
            );
        }
        assert!(stderr.is_empty());
        assert_eq!(process.exit().and_then(|exit| exit.code()), Some(0));
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn a_terminal_has_the_size_it_was_opened_with_and_takes_a_new_one() {
        let size = WindowSize { cols: 91, rows: 17 };
        let terminal = Terminal::open(Some(size)).unwrap();
        assert_eq!(window_size(&terminal.slave).unwrap(), size);
        let wider = WindowSize {
            cols: 200,
            rows: 50,
        };
        resize(&terminal.master, wider).unwrap();
        assert_eq!(window_size(&terminal.slave).unwrap(), wider);
        assert_eq!(end_of_file(&terminal.master).unwrap(), 4);
    }
}
