//! `sizes`: a flow-size distribution by name (`"websearch"`), a fixed size (`"10KB"`), or a
//! table `{ dist = ..., ... }` with the parameters of its `dist`.

use crate::flows::FlowCtx;
use crate::paths::relative_to;
use crate::tables::{tag, tagged_tables, At};
use crate::units::{parse_size, Size};
use crate::ScenarioError;
use fctlab_dist::{Cdf, SizeDist};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct FixedDist {
    size: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct UniformDist {
    min: Option<Size>,
    max: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ExponentialDist {
    mean: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct LognormalDist {
    mean: Option<Size>,
    sigma: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ParetoDist {
    shape: Option<f64>,
    mean: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ParetoCDist {
    alpha: Option<f64>,
    c: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct BoundedParetoDist {
    shape: Option<f64>,
    min: Option<Size>,
    max: Option<Size>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct CdfDist {
    file: Option<String>,
    /// The unit of the file's sizes: "B" (default), "KB", ..., or "pkt" (1460 B).
    unit: Option<String>,
}

tagged_tables! {
    /// A size distribution written as a table, by its `dist`.
    enum DistTable {
        "fixed" => Fixed(FixedDist),
        "uniform" => Uniform(UniformDist),
        "exponential" => Exponential(ExponentialDist),
        "lognormal" => Lognormal(LognormalDist),
        "pareto" => Pareto(ParetoDist),
        "pareto_c" => ParetoC(ParetoCDist),
        "bounded_pareto" => BoundedPareto(BoundedParetoDist),
        "cdf" => Cdf(CdfDist),
    }
}

/// `sizes = "websearch" | "10KB" | { dist = ..., ... }`.
pub(crate) fn parse_sizes(ctx: &FlowCtx<'_>, key: &str, v: &toml::Value) -> Result<SizeDist, ScenarioError> {
    let err = |k: &str, m: String| ctx.err(k, m);
    match v {
        toml::Value::String(s) => {
            if let Some(c) = Cdf::builtin(s) {
                return SizeDist::empirical(c).map_err(|m| err(key, m));
            }
            match parse_size(s) {
                Ok(b) => SizeDist::fixed(b).map_err(|m| err(key, m)),
                Err(_) => Err(err(
                    key,
                    format!("\"{s}\" is neither a shipped distribution ({}) nor a size like \"10KB\"", Cdf::builtin_names().join(", ")),
                )),
            }
        }
        toml::Value::Integer(b) if *b > 0 => SizeDist::fixed(*b as u64).map_err(|m| err(key, m)),
        toml::Value::Table(t) => {
            let at = At { file: &ctx.file, prefix: key };
            let dist = tag(t, "dist", at)?;
            let allowed = DistTable::keys_of(&dist)
                .ok_or_else(|| err(&format!("{key}.dist"), format!("unknown distribution \"{dist}\" (known: {})", DistTable::NAMES.join(", "))))?;
            if let Some(k) = t.keys().find(|k| *k != "dist" && !allowed.contains(&k.as_str())) {
                return Err(err(&format!("{key}.{k}"), format!("not a parameter of \"{dist}\" (its parameters: {})", allowed.join(", "))));
            }
            let mut params = t.clone();
            params.remove("dist");
            let need = |k: &str| err(&format!("{key}.{k}"), format!("\"{dist}\" needs `{k}`"));
            let size = |v: Option<Size>, k: &str| v.map(|s| s.0).ok_or_else(|| need(k));
            let num = |v: Option<f64>, k: &str| v.ok_or_else(|| need(k));
            let r = match DistTable::parse(&dist, params, at)? {
                DistTable::Fixed(d) => SizeDist::fixed(size(d.size, "size")?),
                DistTable::Uniform(d) => SizeDist::uniform(size(d.min, "min")?, size(d.max, "max")?),
                DistTable::Exponential(d) => SizeDist::exponential(size(d.mean, "mean")? as f64),
                DistTable::Lognormal(d) => SizeDist::lognormal(size(d.mean, "mean")? as f64, num(d.sigma, "sigma")?),
                DistTable::Pareto(d) => SizeDist::pareto(num(d.shape, "shape")?, size(d.mean, "mean")? as f64),
                DistTable::ParetoC(d) => SizeDist::pareto_c(num(d.alpha, "alpha")?, num(d.c, "c")?),
                DistTable::BoundedPareto(d) => SizeDist::bounded_pareto(num(d.shape, "shape")?, size(d.min, "min")? as f64, size(d.max, "max")? as f64),
                DistTable::Cdf(d) => {
                    let file = d.file.ok_or_else(|| need("file"))?;
                    let unit = match d.unit.as_deref() {
                        None => 1.0,
                        Some("pkt" | "packets") => 1460.0,
                        Some(u) => parse_size(&format!("1{u}")).map_err(|m| err(&format!("{key}.unit"), m))? as f64,
                    };
                    let path = relative_to(&ctx.file, &file);
                    let text = crate::limits::read_text_file(&path).map_err(|m| err(&format!("{key}.file"), m))?;
                    let cdf = Cdf::parse(&text, unit, &path.display().to_string()).map_err(|m| err(&format!("{key}.file"), m))?;
                    SizeDist::empirical(cdf)
                }
            };
            r.map_err(|m| err(key, m))
        }
        other => Err(err(key, format!("expected a distribution name (\"websearch\"), a size (\"10KB\") or a table {{ dist = ... }}, got {other}"))),
    }
}
