//! The datastore tiers: the directories a datastore holds,
//! named as `.swamp.toml` and paths name them. Vocabulary only; where a
//! tier lives is [`crate::layout`]'s to say.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The datastore-tier subdirectories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Tier {
    Data,
    Outputs,
    WorkflowRuns,
    DefinitionsEvaluated,
    WorkflowsEvaluated,
    AutoDefinitions,
    Audit,
    Telemetry,
    Logs,
    Files,
    Config,
}

impl Tier {
    pub const ALL: [Tier; 11] = [
        Tier::Data,
        Tier::Outputs,
        Tier::WorkflowRuns,
        Tier::DefinitionsEvaluated,
        Tier::WorkflowsEvaluated,
        Tier::AutoDefinitions,
        Tier::Audit,
        Tier::Telemetry,
        Tier::Logs,
        Tier::Files,
        Tier::Config,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Data => "data",
            Tier::Outputs => "outputs",
            Tier::WorkflowRuns => "workflow-runs",
            Tier::DefinitionsEvaluated => "definitions-evaluated",
            Tier::WorkflowsEvaluated => "workflows-evaluated",
            Tier::AutoDefinitions => "auto-definitions",
            Tier::Audit => "audit",
            Tier::Telemetry => "telemetry",
            Tier::Logs => "logs",
            Tier::Files => "files",
            Tier::Config => "config",
        }
    }

    pub fn parse(s: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for Tier {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Tier::parse(&s).ok_or_else(|| {
            let all: Vec<_> = Tier::ALL.iter().map(|t| t.as_str()).collect();
            format!(
                "{s:?} is not a datastore directory (one of: {})",
                all.join(", ")
            )
        })
    }
}

impl From<Tier> for String {
    fn from(t: Tier) -> String {
        t.as_str().to_string()
    }
}
