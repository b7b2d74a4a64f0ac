use toolgate::HookContext;

fn main() {
    let mut ctx = HookContext::builder("u_001", "sess_1").tier("free").build();
    // The model talked the host into an upgrade: the context cannot be changed.
    ctx.tier = Some("premium".to_owned());
    ctx.set_tier("premium");
}
