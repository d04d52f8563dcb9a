//! The `limits` entry of a backend's probe Hash: which launch limits this
//! host enforces, under the names Ruby shows.

use super::Enforcement;

impl Enforcement {
    /// Each limit's name (`memory_bytes`, `tasks`, `cpu_seconds`,
    /// `process_tree_ownership`) with `Ok` where the kernel enforces it, else
    /// the reason it cannot (the path that could not be written).
    pub fn report(&self) -> [(&'static str, &Result<(), super::Unavailable>); 4] {
        [
            ("memory_bytes", &self.memory),
            ("tasks", &self.tasks),
            ("cpu_seconds", &self.cpu),
            ("process_tree_ownership", &self.tree),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Unavailable;

    #[test]
    fn names_every_limit_with_its_status() {
        let enforcement = Enforcement {
            memory: Ok(()),
            tasks: Err(Unavailable::NotListed { controller: "pids" }),
            cpu: Ok(()),
            tree: Err(Unavailable::NoV2Hierarchy),
        };
        let report = enforcement.report();
        let names: Vec<&str> = report.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            names,
            [
                "memory_bytes",
                "tasks",
                "cpu_seconds",
                "process_tree_ownership"
            ]
        );
        assert_eq!(report[0].1, &Ok(()));
        assert_eq!(
            report[1].1,
            &Err(Unavailable::NotListed { controller: "pids" })
        );
        assert_eq!(report[3].1, &Err(Unavailable::NoV2Hierarchy));
    }
}
