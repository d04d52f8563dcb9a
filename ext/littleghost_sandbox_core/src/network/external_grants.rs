//! G.4 at `open`: an external gateway's runtime paths must be process grants
//! of the policy it serves.

use super::ExternalGateway;
use crate::error::Result;
use crate::policy::Policy;

impl ExternalGateway {
    /// PolicyError naming every declared runtime path that `policy` does not
    /// grant under `runtime_paths` (see [`ExternalGateway::check_grants`]).
    pub fn check_policy(&self, policy: &Policy) -> Result<()> {
        let granted = policy.runtime_paths.entries().iter();
        self.check_grants(granted.map(|(name, _)| name.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::Access;
    use crate::policy::GrantTable;

    #[test]
    fn only_runtime_path_grants_count() {
        let dir = tempfile::tempdir().unwrap();
        let roots = vec![("proxy".to_string(), dir.path().join("proxy"))];
        let gateway = ExternalGateway::new(roots, dir.path().join("proxy/s")).unwrap();
        let mut granted = Policy {
            runtime_paths: GrantTable::of(&[("proxy", Access::ReadWrite)]),
            ..Policy::default()
        };
        gateway.check_policy(&granted).unwrap();
        granted.files = granted.runtime_paths.clone();
        granted.runtime_paths = GrantTable::default();
        assert_eq!(
            gateway.check_policy(&granted).unwrap_err(),
            super::super::external_refusal::Refusal::NotGrants(vec!["proxy".into()]).into()
        );
    }
}
