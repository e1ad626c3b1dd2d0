use serde_json::json;
use wield_core::approval::{ApprovalCall, Decision, Resolver, ResolverChain, Subject};
use wield_core::{Session, ToolTraits};

use super::ask;
use crate::resolver::{LuaResolver, auto_approve_file, load_resolvers};
use crate::sandbox::Limits;

#[test]
fn resolver_files_decide_error_or_fail_to_load() {
    let dir = tempfile::tempdir().unwrap();
    super::files(
        dir.path(),
        &[
            (
                "deny.lua",
                r#"return { name = "no_rm", priority = 70, description = "No rm",
                  resolve = function(tool_name, input, ctx)
                    if tool_name == "bash" and input.command:find("rm ") then return "deny" end
                    if tool_name == "read" and ctx.cwd == "/ws" and ctx.sandboxed then return "approve" end
                    if tool_name == "write" then return "require_approval" end
                  end }"#,
            ),
            (
                "errs.lua",
                "return { name = 'errs', resolve = function() error('broken resolver') end }",
            ),
            ("bad.lua", "return { name = 'bad' }"),
        ],
    );
    let (resolvers, warnings) = load_resolvers(dir.path(), Limits::default());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("bad.lua") && warnings[0].contains("`resolve`"),
        "{warnings:?}"
    );
    let by = |n: &str| resolvers.iter().find(|r| r.name() == n).unwrap().clone();
    let deny = by("lua:no_rm");
    assert_eq!(deny.priority(), 70);
    assert!(matches!(
        ask(&*deny, "bash", json!({"command": "rm -rf /"})),
        Ok(Decision::Deny(_))
    ));
    assert_eq!(ask(&*deny, "read", json!({})), Ok(Decision::Approve));
    assert_eq!(ask(&*deny, "write", json!({})), Ok(Decision::RequireApproval));
    assert_eq!(ask(&*deny, "grep", json!({})), Ok(Decision::Pass));
    let errs = by("lua:errs");
    assert!(ask(&*errs, "read", json!({})).unwrap_err().contains("broken resolver"));

    // In a chain, the failing one is skipped and the next decides.
    let mut chain = ResolverChain::new();
    chain.add(errs);
    chain.add(deny);
    let session = Session::new("s", true);
    let traits = ToolTraits::default();
    let input = json!({"command": "rm -rf /"});
    let v = chain.resolve(&ApprovalCall {
        tool: "bash",
        input: &input,
        subject: &Subject::None,
        traits: &traits,
        session: &session,
        workspace: std::path::Path::new("/ws"),
        sandboxed: false,
    });
    assert_eq!(v.resolver, "lua:no_rm");
    assert!(matches!(v.decision, Decision::Deny(_)));
}

#[test]
fn an_auto_approve_function_file_answers_with_booleans() {
    let dir = tempfile::tempdir().unwrap();
    super::files(
        dir.path(),
        &[(
            "approve.lua",
            r#"return function(tool_name, input, ctx)
                 if tool_name == "read" then return true end
                 if tool_name == "bash" then return "deny" end
                 if tool_name == "write" then return false end
                 if tool_name == "odd" then return 7 end
               end"#,
        )],
    );
    assert_eq!(
        auto_approve_file("approve.lua", dir.path()),
        Some(dir.path().join("approve.lua"))
    );
    assert_eq!(
        auto_approve_file("lua:a/b.lua", dir.path()),
        Some(dir.path().join("a/b.lua"))
    );
    assert_eq!(auto_approve_file("read", dir.path()), None);
    assert_eq!(auto_approve_file("bash:cat *.lua", dir.path()), None);
    let r =
        LuaResolver::auto_approve_file(&dir.path().join("approve.lua"), Some(dir.path()), Limits::default()).unwrap();
    assert_eq!(r.priority(), 100);
    assert_eq!(ask(&r, "read", json!({})), Ok(Decision::Approve));
    assert!(matches!(ask(&r, "bash", json!({})), Ok(Decision::Deny(_))));
    assert_eq!(ask(&r, "write", json!({})), Ok(Decision::RequireApproval));
    assert_eq!(ask(&r, "grep", json!({})), Ok(Decision::Pass));
    assert!(ask(&r, "odd", json!({})).unwrap_err().contains("returned a integer"));
}
