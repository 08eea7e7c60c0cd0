//! The secret list as the allow rules expose it: `Read(…)` allow rules reveal the secret files they
//! name. The list itself is the sandbox's ([`crate::secret`]); reading rules is the policy's job,
//! so the one place that turns rules into revealed paths is here.

use std::path::Path;

use crate::{
    error::Result,
    permission::{PathSet, Rule, RuleAction, Specifier},
    secret::{SecretFiles, Secrets},
};

/// The list `files`, where what the `Read(…)` rules among the allow rules `rules` name is exposed.
///
/// Rules are spelled as for [`crate::PolicyBuilder::rule`], with `root` as the workspace root, and
/// rules of other tools are ignored. A session that builds its sandbox before its policy gets the
/// same list as [`crate::PermissionPolicy::secrets`] this way.
pub fn secrets_for_rules<'a>(
    files: SecretFiles,
    root: &Path,
    rules: impl IntoIterator<Item = &'a str>,
) -> Result<Secrets> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let mut revealed = Vec::new();
    for text in rules {
        let (rule, _) = Rule::parse(RuleAction::Allow, text, "allow rule", &root, &[])?;
        if let (Specifier::Path(set), "Read") = (&rule.specifier, rule.tool.as_str()) {
            revealed.push(set.clone());
        }
    }
    Ok(Secrets::with_revealed(files, PathSet::union(revealed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_allow_rules_reveal_and_other_rules_do_not() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let env = root.join(".env");
        let pem = root.join("key.pem");
        let secrets =
            secrets_for_rules(SecretFiles::default(), &root, ["Read(./.env)", "Edit(*.pem)"])
                .unwrap();
        assert!(secrets.is_revealed(&env), "Read(./.env) reveals .env");
        assert!(!secrets.is_revealed(&pem), "an Edit rule reveals nothing");
        assert!(secrets.is_secret(&pem, None));
        assert!(secrets_for_rules(SecretFiles::default(), &root, ["Read("]).is_err());
    }
}
