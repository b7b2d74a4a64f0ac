//! Who may decide what ([`Policy`]): which people or groups may approve, edit or decline which
//! tools' calls ([`Action`]), whether the user a call was made for may decide it (never, by
//! default), and which tools need two different people. The signed-in person is an
//! [`Identity`]; a refusal says why ([`NotAllowed`]).
//!
//! [`Inbox::decide`](super::Inbox::decide) hands the policy and the signed-in identity the page
//! passes it to the store, which applies it to the call in the decision's own atomic step: a
//! page cannot skip it, and `decided_by` is always that identity, never a form field.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::call::InboxCall;

/// The signed-in person deciding: their id (as the sign-in gave it: an e-mail, a user id) and
/// the groups they belong to. The page builds it from its session, never from a form.
///
/// The id is compared with a call's `user_id` exactly, for the rule that nobody decides their
/// own calls: a deployment whose sign-in and agent name people differently maps one to the
/// other before building it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    id: String,
    groups: BTreeSet<String>,
}

impl Identity {
    /// The person `id`, in no group.
    pub fn new(id: impl Into<String>) -> Identity {
        Identity {
            id: id.into(),
            groups: BTreeSet::new(),
        }
    }

    /// Also in `group`.
    pub fn in_group(mut self, group: impl Into<String>) -> Identity {
        self.groups.insert(group.into());
        self
    }

    /// The id: what decisions and audit lines record as who decided.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The groups, sorted.
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().map(String::as_str)
    }
}

/// What a person does to a call. Serialized in snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run it as shown.
    Approve,
    /// Run it with another input (of the same tool).
    Edit,
    /// Do not run it.
    Decline,
}

impl Action {
    /// `approve`, `edit`, `decline`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Approve => "approve",
            Action::Edit => "edit",
            Action::Decline => "decline",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the policy refuses a person's decision. `Display` is the sentence a page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
#[non_exhaustive]
pub enum NotAllowed {
    /// The person is the user the call was made for: `the call was made on behalf of u_001,
    /// who may not decide it: another person must`.
    OwnCall {
        /// The call's user.
        user_id: String,
    },
    /// No rule lets this person (by id or group) do this to this tool's calls: `no rule of the
    /// policy lets lead@example.com approve calls of issue_refund`.
    NoRule {
        /// Who.
        by: String,
        /// What they tried.
        action: Action,
        /// The tool.
        tool: String,
    },
}

impl fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAllowed::OwnCall { user_id } => write!(
                f,
                "the call was made on behalf of {user_id}, who may not decide it: another \
                 person must"
            ),
            NotAllowed::NoRule { by, action, tool } => write!(
                f,
                "no rule of the policy lets {by} {action} calls of {tool}"
            ),
        }
    }
}

/// One rule: these people or groups may do these things to these tools' calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Who: identity ids, `group:NAME` for everyone in a group, or `*` for anyone signed in.
    pub who: Vec<String>,
    /// What they may do.
    pub may: Vec<Action>,
    /// Which tools: names, or `*` for every tool.
    pub tools: Vec<String>,
}

impl Rule {
    fn covers(&self, who: &Identity, action: Action, tool: &str) -> bool {
        self.may.contains(&action)
            && self.tools.iter().any(|t| t == "*" || t == tool)
            && self.who.iter().any(|w| match w.strip_prefix("group:") {
                Some(group) => who.groups.contains(group),
                None => w == "*" || *w == who.id,
            })
    }

    /// What is wrong with the rule, for a policy read from a file.
    fn problem(&self, n: usize) -> Option<String> {
        let empty = |what: &str| Some(format!("rule {n} has no {what}"));
        if self.who.is_empty() {
            return empty("`who`");
        }
        if self.may.is_empty() {
            return empty("`may`");
        }
        if self.tools.is_empty() {
            return empty("`tools`");
        }
        if let Some(w) = self
            .who
            .iter()
            .find(|w| w.is_empty() || w.strip_prefix("group:") == Some(""))
        {
            return Some(format!(
                "rule {n} names {w:?} in `who`: an identity id, `group:NAME` or `*`"
            ));
        }
        if self.tools.iter().any(String::is_empty) {
            return Some(format!(
                "rule {n} names an empty tool in `tools`: a name or `*`"
            ));
        }
        None
    }
}

/// Who may decide which calls. Nothing is allowed unless a rule allows it (fail closed); the
/// user a call was made for may not decide it unless [`allow_own_calls`](Self::allow_own_calls);
/// a [`two_person`](Self::two_person) tool's call runs only after two different people approved
/// it (the second approval completes it; an edit counts as its editor's approval of the edited
/// input, which a second person must then approve; one decline ends it).
///
/// A page reads its policy file into one: any format serde reads, of this JSON shape
/// (unknown keys are refused, so a typo never widens or narrows the policy silently):
///
/// ```
/// use toolgate_core::approval::inbox::{Action, Identity, Policy};
///
/// let policy: Policy = serde_json::from_str(r#"{
///     "rules": [
///         {"who": ["group:support-leads"], "may": ["approve", "edit", "decline"],
///          "tools": ["issue_refund"]},
///         {"who": ["*"], "may": ["decline"], "tools": ["*"]}
///     ],
///     "two_person": ["issue_refund"]
/// }"#)?;
/// let lead = Identity::new("lead@example.com").in_group("support-leads");
/// let agent = Identity::new("agent@example.com");
/// assert!(policy.may(&lead, Action::Approve, "issue_refund"));
/// assert!(!policy.may(&agent, Action::Approve, "issue_refund"));
/// assert!(policy.may(&agent, Action::Decline, "issue_refund"));
/// assert_eq!(policy.approvals_needed("issue_refund"), 2);
///
/// // The same in code.
/// let same = Policy::new()
///     .allow(
///         "group:support-leads",
///         &[Action::Approve, Action::Edit, Action::Decline],
///         &["issue_refund"],
///     )
///     .allow("*", &[Action::Decline], &["*"])
///     .two_person("issue_refund");
/// assert_eq!(same, policy);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "PolicyFile", into = "PolicyFile")]
pub struct Policy {
    rules: Vec<Rule>,
    two_person: BTreeSet<String>,
    own_calls: bool,
}

/// The serialized form of a [`Policy`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    two_person: BTreeSet<String>,
    /// Whether a call's own user may decide it (`false` when absent).
    #[serde(default)]
    own_calls: bool,
}

impl TryFrom<PolicyFile> for Policy {
    type Error = String;

    fn try_from(file: PolicyFile) -> Result<Policy, String> {
        if file.two_person.iter().any(String::is_empty) {
            return Err("`two_person` names an empty tool: a name or `*`".to_owned());
        }
        if let Some(problem) = file
            .rules
            .iter()
            .enumerate()
            .find_map(|(i, r)| r.problem(i + 1))
        {
            return Err(problem);
        }
        Ok(Policy {
            rules: file.rules,
            two_person: file.two_person,
            own_calls: file.own_calls,
        })
    }
}

impl From<Policy> for PolicyFile {
    fn from(p: Policy) -> PolicyFile {
        PolicyFile {
            rules: p.rules,
            two_person: p.two_person,
            own_calls: p.own_calls,
        }
    }
}

impl Policy {
    /// A policy that allows nothing: add [`allow`](Self::allow) rules.
    pub fn new() -> Policy {
        Policy::default()
    }

    /// Lets `who` (an identity id, `group:NAME`, or `*` for anyone signed in) do `actions` to
    /// the calls of `tools` (names, or `*` for every tool).
    pub fn allow(mut self, who: impl Into<String>, actions: &[Action], tools: &[&str]) -> Policy {
        self.rules.push(Rule {
            who: vec![who.into()],
            may: actions.to_vec(),
            tools: tools.iter().map(|&t| t.to_owned()).collect(),
        });
        self
    }

    /// Calls of `tool` (a name, or `*` for every tool) need two different people's approvals.
    pub fn two_person(mut self, tool: impl Into<String>) -> Policy {
        self.two_person.insert(tool.into());
        self
    }

    /// Lets the user a call was made for decide it too (off by default: a person asking for
    /// their own refund must not approve it).
    pub fn allow_own_calls(mut self) -> Policy {
        self.own_calls = true;
        self
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether some rule lets `who` do `action` to calls of `tool` (the own-call rule aside):
    /// for a page choosing which buttons to show. [`check`](Self::check) is what decides.
    pub fn may(&self, who: &Identity, action: Action, tool: &str) -> bool {
        self.rules.iter().any(|r| r.covers(who, action, tool))
    }

    /// Whether `who` may do `action` to `call`: refused as [`NotAllowed::OwnCall`] when they
    /// are its user (unless own calls are allowed), else [`NotAllowed::NoRule`] when no rule
    /// covers it.
    ///
    /// # Errors
    /// The [`NotAllowed`] saying why.
    pub fn check(
        &self,
        who: &Identity,
        action: Action,
        call: &InboxCall,
    ) -> Result<(), NotAllowed> {
        self.check_call(who, action, &call.name, &call.user_id)
    }

    /// [`check`](Self::check) of a call of `tool` made for `user_id`.
    pub(crate) fn check_call(
        &self,
        who: &Identity,
        action: Action,
        tool: &str,
        user_id: &str,
    ) -> Result<(), NotAllowed> {
        if !self.own_calls && who.id == user_id {
            return Err(NotAllowed::OwnCall {
                user_id: user_id.to_owned(),
            });
        }
        if !self.may(who, action, tool) {
            return Err(NotAllowed::NoRule {
                by: who.id.clone(),
                action,
                tool: tool.to_owned(),
            });
        }
        Ok(())
    }

    /// How many different people must approve a call of `tool`: 2 for a two-person tool (named,
    /// or every tool when `two_person` holds `*`, as a rule's `tools` reads it), else 1.
    pub fn approvals_needed(&self, tool: &str) -> u8 {
        if self.two_person.contains(tool) || self.two_person.contains("*") {
            2
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_file_with_a_mistake_is_refused_naming_it() {
        let read = |text: &str| serde_json::from_str::<Policy>(text).map_err(|e| e.to_string());
        assert_eq!(read(r#"{}"#), Ok(Policy::new()));
        let err = read(r#"{"rules": [], "two_persons": ["x"]}"#).unwrap_err();
        assert!(err.starts_with("unknown field `two_persons`"), "{err}");
        let err =
            read(r#"{"rules": [{"who": ["a"], "may": ["aprove"], "tools": ["*"]}]}"#).unwrap_err();
        assert!(err.starts_with("unknown variant `aprove`"), "{err}");
        assert_eq!(
            read(r#"{"rules": [{"who": [], "may": ["approve"], "tools": ["*"]}]}"#),
            Err("rule 1 has no `who`".to_owned())
        );
        assert_eq!(
            read(
                r#"{"rules": [{"who": ["*"], "may": ["approve"], "tools": ["*"]},
                               {"who": ["group:"], "may": ["approve"], "tools": ["*"]}]}"#
            ),
            Err("rule 2 names \"group:\" in `who`: an identity id, `group:NAME` or `*`".to_owned())
        );
    }

    #[test]
    fn two_person_star_means_every_tool_as_in_a_rule() {
        let p: Policy = serde_json::from_str(r#"{"rules": [], "two_person": ["*"]}"#).unwrap();
        assert_eq!(p.approvals_needed("issue_refund"), 2);
        assert_eq!(Policy::new().two_person("*").approvals_needed("x"), 2);
        assert_eq!(Policy::new().two_person("a").approvals_needed("b"), 1);
        assert_eq!(
            serde_json::from_str::<Policy>(r#"{"two_person": [""]}"#)
                .map_err(|e| e.to_string())
                .unwrap_err(),
            "`two_person` names an empty tool: a name or `*`"
        );
    }

    #[test]
    fn a_policy_reads_back_what_it_writes() {
        let p = Policy::new()
            .allow("group:leads", &[Action::Approve], &["refund"])
            .two_person("refund")
            .allow_own_calls();
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Policy>(&text).unwrap(), p);
    }
}
