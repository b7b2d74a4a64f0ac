use toolgate::{HookContext, tool};

/// Tells the user's id.
#[tool]
fn whoami(ctx: HookContext) -> String {
    ctx.user_id().to_owned()
}

fn main() {}
