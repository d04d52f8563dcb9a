//! The fast start: glibc `posix_spawn` with file actions and attributes that
//! give the child exactly what [`super::spawn`]'s fork path gives it.
//!
//! glibc (2.24+) clones with `CLONE_VM | CLONE_VFORK`, so no page tables are
//! copied, and reports a failed file action or exec through its return value.
//! `posix_spawn`, unlike `posix_spawnp` and the pre-2.15 symbol, never retries
//! an ENOEXEC file with `/bin/sh` (17.1). `addchdir_np` needs glibc 2.29 and
//! `addclosefrom_np` 2.34 (Debian 12 has 2.36); the `libc` crate declares both.

use std::mem::MaybeUninit;

use super::plan::ChildPlan;

/// Starts `plan`, returning the child's pid or the errno of the step that failed.
pub(super) fn spawn(plan: &ChildPlan) -> Result<i32, i32> {
    let mut actions = FileActions::new()?;
    let targets = (0..3).chain(3..plan.first_free);
    for (&source, target) in plan.stdio.iter().chain(&plan.inherited).zip(targets) {
        // SAFETY: an initialised actions object and descriptor numbers.
        check(unsafe { libc::posix_spawn_file_actions_adddup2(actions.as_mut(), source, target) })?;
    }
    if let Some(dir) = &plan.chdir {
        // SAFETY: glibc copies the NUL-terminated path.
        check(unsafe {
            libc::posix_spawn_file_actions_addchdir_np(actions.as_mut(), dir.as_ptr())
        })?;
    }
    // Closes every other descriptor, including the pipe ends' originals.
    // SAFETY: an initialised actions object.
    check(unsafe {
        libc::posix_spawn_file_actions_addclosefrom_np(actions.as_mut(), plan.first_free)
    })?;

    let mut attributes = Attributes::new()?;
    let mut empty = MaybeUninit::<libc::sigset_t>::uninit();
    let mut every = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: the sets are initialised by sigemptyset/sigfillset before use;
    // the setters copy them into the initialised attributes.
    unsafe {
        libc::sigemptyset(empty.as_mut_ptr());
        // Every signal back to its default (glibc leaves out its internal
        // ones): ignored ones (SIGPIPE, SIGINT under nohup...) would
        // otherwise survive exec.
        libc::sigfillset(every.as_mut_ptr());
        let flags = libc::POSIX_SPAWN_SETPGROUP
            | libc::POSIX_SPAWN_SETSIGMASK
            | libc::POSIX_SPAWN_SETSIGDEF;
        check(libc::posix_spawnattr_setflags(
            attributes.as_mut(),
            flags as libc::c_short,
        ))?;
        // Group 0: the child leads a new process group (17.7).
        check(libc::posix_spawnattr_setpgroup(attributes.as_mut(), 0))?;
        check(libc::posix_spawnattr_setsigmask(
            attributes.as_mut(),
            empty.as_ptr(),
        ))?;
        check(libc::posix_spawnattr_setsigdefault(
            attributes.as_mut(),
            every.as_ptr(),
        ))?;
    }

    let mut pid: libc::pid_t = 0;
    // SAFETY: NUL-terminated program, NULL-terminated argv/envp owned by
    // `plan.exec`, and initialised actions and attributes.
    check(unsafe {
        libc::posix_spawn(
            &mut pid,
            plan.exec.program.as_ptr(),
            actions.as_mut(),
            attributes.as_mut(),
            plan.exec.argv.as_ptr() as *const *mut libc::c_char,
            plan.exec.envp.as_ptr() as *const *mut libc::c_char,
        )
    })?;
    Ok(pid)
}

fn check(code: libc::c_int) -> Result<(), i32> {
    if code == 0 {
        Ok(())
    } else {
        Err(code)
    }
}

/// `posix_spawn_file_actions_t`, destroyed on drop.
struct FileActions(libc::posix_spawn_file_actions_t);

impl FileActions {
    fn new() -> Result<FileActions, i32> {
        let mut raw = MaybeUninit::uninit();
        // SAFETY: init fills the object; on failure it is not used.
        check(unsafe { libc::posix_spawn_file_actions_init(raw.as_mut_ptr()) })?;
        // SAFETY: init returned 0 (`check` passed), so it filled the object.
        Ok(FileActions(unsafe { raw.assume_init() }))
    }

    fn as_mut(&mut self) -> *mut libc::posix_spawn_file_actions_t {
        &mut self.0
    }
}

impl Drop for FileActions {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed once.
        unsafe { libc::posix_spawn_file_actions_destroy(&mut self.0) };
    }
}

/// `posix_spawnattr_t`, destroyed on drop.
struct Attributes(libc::posix_spawnattr_t);

impl Attributes {
    fn new() -> Result<Attributes, i32> {
        let mut raw = MaybeUninit::uninit();
        // SAFETY: init fills the object; on failure it is not used.
        check(unsafe { libc::posix_spawnattr_init(raw.as_mut_ptr()) })?;
        // SAFETY: init returned 0 (`check` passed), so it filled the object.
        Ok(Attributes(unsafe { raw.assume_init() }))
    }

    fn as_mut(&mut self) -> *mut libc::posix_spawnattr_t {
        &mut self.0
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed once.
        unsafe { libc::posix_spawnattr_destroy(&mut self.0) };
    }
}
