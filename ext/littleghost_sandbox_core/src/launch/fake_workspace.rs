//! A workspace for the launch tests: real directories in a temporary
//! folder (grants are pinned by handle, so they must exist), resolution by
//! the 3.3 rules the tests need, and errors of its own type so a test sees
//! which ones pass through unchanged.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::prepare::{Kind, LaunchCall, LaunchError, Refused, WorkspaceView};
use crate::fs::anchor::Anchors;

/// The error a fake workspace raises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raised(pub String);

pub struct FakeWorkspace {
    _folder: tempfile::TempDir,
    pub root: PathBuf,
    /// (name, directory) of each named path.
    pub paths: Vec<(String, PathBuf)>,
    pub variables: Vec<(String, String)>,
}

impl FakeWorkspace {
    /// A root holding `subdirectories`, and each named path as a directory beside it.
    pub fn new(subdirectories: &[&str], named: &[&str]) -> FakeWorkspace {
        let folder = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(folder.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        for subdirectory in subdirectories {
            std::fs::create_dir_all(root.join(subdirectory)).unwrap();
        }
        let paths: Vec<(String, PathBuf)> = named
            .iter()
            .map(|name| {
                let directory = base.join(name);
                std::fs::create_dir(&directory).unwrap();
                (name.to_string(), directory)
            })
            .collect();
        let variables = vec![(
            "LITTLE_GHOST_WORKSPACE_ROOT".to_string(),
            root.to_str().unwrap().to_string(),
        )];
        FakeWorkspace {
            _folder: folder,
            root,
            paths,
            variables,
        }
    }
}

impl WorkspaceView<Raised> for FakeWorkspace {
    fn directory(&self, name: &str) -> Result<PathBuf, Raised> {
        if name == crate::workspace::ROOT_NAME {
            return Ok(self.root.clone());
        }
        self.paths
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, directory)| directory.clone())
            .ok_or_else(|| Raised(format!("no path {name}")))
    }

    fn directories(&self) -> Result<Vec<PathBuf>, Raised> {
        let named = self.paths.iter().map(|(_, directory)| directory.clone());
        Ok(std::iter::once(self.root.clone()).chain(named).collect())
    }

    fn environment(&self) -> Result<Vec<(String, String)>, Raised> {
        Ok(self.variables.clone())
    }

    fn resolve(&self, logical: &Path) -> Result<PathBuf, Refused<Raised>> {
        if logical == Path::new("raise") {
            return Err(Refused::Raised(Raised("the workspace raised".into())));
        }
        if logical.is_absolute() {
            return Err(Refused::Reason(
                "workspace paths must be relative or use workspace://NAME/...".into(),
            ));
        }
        if logical.components().any(|c| c == Component::ParentDir) {
            return Err(Refused::Reason(
                "workspace path traversal is not allowed".into(),
            ));
        }
        Ok(crate::paths::clean(&self.root.join(logical)))
    }

    fn anchors(&self) -> Option<Arc<Anchors>> {
        None
    }
}

/// The call the launcher tests start from: `pwd` of `kind` in `cwd`, with
/// one variable and nothing else asked.
pub fn pwd_call(kind: Kind, cwd: Option<&str>) -> LaunchCall<Raised> {
    LaunchCall {
        kind,
        argv: Ok(vec!["pwd".into()]),
        scope: Ok(None),
        allow_subprocesses: None,
        cwd: Ok(cwd.map(PathBuf::from)),
        inherit_environment: false,
        environment: Ok(vec![("B".into(), "2".into())]),
    }
}

/// What a refused launch says.
pub fn message(error: LaunchError<Raised>) -> String {
    error
        .into_caller(|core| Raised(core.message().to_owned()))
        .0
}
