//! Process runner, sessions and supervision.
