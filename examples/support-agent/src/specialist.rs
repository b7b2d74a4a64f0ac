//! Which of the agent's tools a dispatcher serves: the two specialists, each built from the one
//! registry with a subset of the tools (`agent.rs` builds them).

/// A specialist: one dispatcher over the agent's registered tools and hooks, with a subset of
/// the tools. A hook whose tools are all filtered out is not part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Specialist {
    /// Every tool but `create_jira_ticket`.
    Refunds,
    /// `lookup_user`, `get_order_details`, `search_faq`, `create_jira_ticket`.
    Triage,
}

impl Specialist {
    /// Both, in the order `--help` lists them.
    pub const ALL: [Specialist; 2] = [Specialist::Refunds, Specialist::Triage];

    /// `refunds` or `triage`.
    pub fn as_str(self) -> &'static str {
        match self {
            Specialist::Refunds => "refunds",
            Specialist::Triage => "triage",
        }
    }

    /// The specialist with this name.
    pub fn from_name(name: &str) -> Option<Specialist> {
        Specialist::ALL.into_iter().find(|s| s.as_str() == name)
    }
}
