//! The `--sim` spec of `goodput run` and `goodput sweep`: the simulator to
//! benchmark as a model preset, a hardware preset and `key=value` options,
//! comma-separated (`llama-3.1-70b,h100-sxm,tp=4,seed=0`).
//!
//! Each option is a `goodput sim` flag without its dashes (`tp` is short for
//! `tensor-parallel`) and takes that flag's own type: an integer option
//! rejects `1.5` instead of truncating it, `seed` accepts 0, a number option
//! keeps its fraction, a duration option takes `500ms` or `2s`. A value of
//! the wrong type is an error that names the option and what it takes.
//! Options that take a comma-separated value (`output-len-dist`) or concern
//! the listening address (`host`, `port`) are not options here.

use super::SimArgs;
use crate::error::SimError;
use crate::faults::FaultSpec;
use crate::presets::{builtin_hardware, builtin_models, hardware_by_name, model_by_name};
use goodput_common::units::parse_duration;

/// What an option's value must be: the error of a value that is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    /// A whole number from 1 to the field's largest value.
    Count,
    /// A whole number from 0 to the field's largest value.
    Whole,
    /// A finite number above 0.
    Positive,
    /// A number above 0 and at most 1.
    Share,
    /// A duration with its unit.
    Duration,
    /// A fault rate or schedule.
    Fault,
    /// A number of 0 or more.
    NonNegative,
    /// `fcfs` or `priority`.
    Policy,
    /// Names joined by `+`.
    Names,
}

impl Expected {
    fn words(self) -> &'static str {
        match self {
            Expected::Count => "an integer >= 1",
            Expected::Whole => "an integer >= 0",
            Expected::Positive => "a number > 0",
            Expected::Share => "a number in (0, 1]",
            Expected::Duration => "a duration, e.g. 500ms or 2s",
            Expected::Fault => "a rate between 0 and 1 (e.g. 0.05) or a schedule every:N",
            Expected::NonNegative => "a number >= 0",
            Expected::Policy => "fcfs or priority",
            Expected::Names => "names joined by + (e.g. adapter-a+adapter-b)",
        }
    }
}

/// An integer of at least `min` that fits the field's type `T`.
fn integer<T: TryFrom<u64>>(v: &str, min: u64, expected: Expected) -> Result<T, Expected> {
    v.parse::<u64>()
        .ok()
        .filter(|&n| n >= min)
        .and_then(|n| T::try_from(n).ok())
        .ok_or(expected)
}

fn count<T: TryFrom<u64>>(v: &str) -> Result<T, Expected> {
    integer(v, 1, Expected::Count)
}

fn whole<T: TryFrom<u64>>(v: &str) -> Result<T, Expected> {
    integer(v, 0, Expected::Whole)
}

fn positive(v: &str) -> Result<f64, Expected> {
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0)
        .ok_or(Expected::Positive)
}

fn share(v: &str) -> Result<f64, Expected> {
    v.parse::<f64>()
        .ok()
        .filter(|x| *x > 0.0 && *x <= 1.0)
        .ok_or(Expected::Share)
}

fn seconds(v: &str) -> Result<f64, Expected> {
    parse_duration(v)
        .map(|d| d.as_secs_f64())
        .map_err(|_| Expected::Duration)
}

fn non_negative(v: &str) -> Result<f64, Expected> {
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or(Expected::NonNegative)
}

/// `a+b+c`: a list inside one comma-separated option.
fn names(v: &str) -> Result<Vec<String>, Expected> {
    let names: Vec<String> = v.split('+').map(|n| n.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        return Err(Expected::Names);
    }
    Ok(names)
}

fn fault(v: &str) -> Result<FaultSpec, Expected> {
    v.parse().map_err(|_| Expected::Fault)
}

/// One option: its key and how its value sets a flag. The parse function
/// called in `set` is the only statement of the option's type.
struct SimOption {
    key: &'static str,
    set: fn(&mut SimArgs, &str) -> Result<(), Expected>,
}

/// Every option; an error message lists their keys in this order.
const OPTIONS: &[SimOption] = &[
    SimOption {
        key: "tp",
        set: |a, v| {
            a.tensor_parallel = Some(count(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "time-scale",
        set: |a, v| {
            a.time_scale = Some(positive(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "max-num-seqs",
        set: |a, v| {
            a.max_num_seqs = Some(count(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "max-num-batched-tokens",
        set: |a, v| {
            a.max_num_batched_tokens = Some(count(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "seed",
        set: |a, v| {
            a.seed = Some(whole(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "spec-tokens",
        set: |a, v| {
            a.spec_tokens = Some(whole(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "spec-acceptance",
        set: |a, v| {
            a.spec_acceptance = Some(share(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "max-model-len",
        set: |a, v| {
            a.max_model_len = Some(count(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "gpu-memory-utilization",
        set: |a, v| {
            a.gpu_memory_utilization = Some(share(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "num-gpu-blocks-override",
        set: |a, v| {
            a.num_gpu_blocks_override = Some(count(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-500",
        set: |a, v| {
            a.fault_500 = Some(fault(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-503",
        set: |a, v| {
            a.fault_503 = Some(fault(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-429",
        set: |a, v| {
            a.fault_429 = Some(fault(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-retry-after",
        set: |a, v| {
            a.fault_retry_after = Some(whole(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-stream-cut",
        set: |a, v| {
            a.fault_stream_cut = Some(fault(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-stall",
        set: |a, v| {
            a.fault_stall = Some(fault(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-stall-duration",
        set: |a, v| {
            a.fault_stall_duration = Some(seconds(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-schema-violation",
        set: |a, v| {
            a.fault_schema_violation = Some(fault(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-malformed",
        set: |a, v| {
            a.fault_malformed = Some(fault(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-slow-headers",
        set: |a, v| {
            a.fault_slow_headers = Some(fault(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "fault-slow-headers-delay",
        set: |a, v| {
            a.fault_slow_headers_delay = Some(seconds(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "scheduling-policy",
        set: |a, v| {
            a.scheduling_policy = Some(v.parse().map_err(|_| Expected::Policy)?);
            Ok(())
        },
    },
    SimOption {
        key: "lora-modules",
        set: |a, v| {
            a.lora_modules = Some(names(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "max-loras",
        set: |a, v| {
            a.max_loras = Some(count(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "max-cpu-loras",
        set: |a, v| {
            a.max_cpu_loras = Some(count(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "lora-load-ms",
        set: |a, v| {
            a.lora_load_ms = Some(non_negative(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "image-patch-px",
        set: |a, v| {
            a.image_patch_px = Some(count(v)?);
            Ok(())
        },
    },
    SimOption {
        key: "embedding-dim",
        set: |a, v| {
            a.embedding_dim = Some(count(v)?);
            Ok(())
        },
    },
];

/// The keys `--sim` takes, for help and error messages.
pub fn spec_keys() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().map(|o| o.key)
}

impl SimArgs {
    /// The flags a `--sim` spec stands for: each comma-separated part is a
    /// model preset, a hardware preset, a `key=value` option ([`spec_keys`])
    /// or a configuration file: a profile written by `goodput calibrate`
    /// (`profile.toml`, or `profile=FILE` for a name without `.toml`), which
    /// the other parts override.
    /// Nothing is checked beyond each value's type here; [`SimArgs::to_config`]
    /// checks the whole (a model that does not fit, a `tp` that does not
    /// divide the attention heads).
    pub fn from_spec(spec: &str) -> Result<SimArgs, SimError> {
        let mut args = SimArgs::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            // A profile (`goodput calibrate`) or any simulator config file.
            let file = part
                .strip_prefix("profile=")
                .or_else(|| part.ends_with(".toml").then_some(part));
            if let Some(path) = file {
                args.config = Some(path.trim().into());
                continue;
            }
            let Some((key, value)) = part.split_once('=') else {
                if model_by_name(part).is_ok() {
                    args.model_profile = Some(part.to_string());
                } else if hardware_by_name(part).is_ok() {
                    args.hardware = Some(part.to_string());
                } else {
                    let models: Vec<String> =
                        builtin_models().into_iter().map(|m| m.name).collect();
                    let hardware: Vec<String> =
                        builtin_hardware().into_iter().map(|h| h.name).collect();
                    return Err(SimError::invalid(
                        "--sim",
                        format!(
                            "'{part}' is not a model ({}), hardware ({}) or key=value option",
                            models.join(", "),
                            hardware.join(", ")
                        ),
                    ));
                }
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            let Some(option) = OPTIONS.iter().find(|o| o.key == key) else {
                return Err(SimError::invalid(
                    "--sim",
                    format!(
                        "unknown option '{key}': valid options are {}",
                        spec_keys().collect::<Vec<_>>().join(", ")
                    ),
                ));
            };
            (option.set)(&mut args, value).map_err(|expected| {
                SimError::invalid(
                    "--sim",
                    format!("{key} takes {}, not '{value}'", expected.words()),
                )
            })?;
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn err(spec: &str) -> String {
        SimArgs::from_spec(spec).unwrap_err().to_string()
    }

    #[test]
    fn each_option_is_parsed_as_its_own_type() {
        let a = SimArgs::from_spec(
            "llama-3.1-70b,h100-sxm,tp=4,seed=0,time-scale=0.25,max-num-seqs=64,\
             gpu-memory-utilization=0.85,fault-500=every:10,fault-stall=0.5,\
             fault-stall-duration=750ms,fault-slow-headers-delay=2,fault-retry-after=0",
        )
        .unwrap();
        assert_eq!(a.model_profile.as_deref(), Some("llama-3.1-70b"));
        assert_eq!(a.hardware.as_deref(), Some("h100-sxm"));
        assert_eq!(a.tensor_parallel, Some(4));
        // Seed 0 is a seed like any other.
        assert_eq!(a.seed, Some(0));
        // A number keeps its fraction.
        assert_eq!(a.time_scale, Some(0.25));
        assert_eq!(a.max_num_seqs, Some(64));
        assert_eq!(a.gpu_memory_utilization, Some(0.85));
        assert_eq!(a.fault_500, Some(FaultSpec::Every(10)));
        assert_eq!(a.fault_stall, Some(FaultSpec::Rate(0.5)));
        // A duration is read with its unit.
        assert_eq!(a.fault_stall_duration, Some(0.75));
        // A bare number is seconds, as for the flag.
        assert_eq!(a.fault_slow_headers_delay, Some(2.0));
        assert_eq!(a.fault_retry_after, Some(0));
        let c = a.to_config().unwrap();
        assert_eq!((c.tensor_parallel, c.seed, c.time_scale), (4, 0, 0.25));
        assert_eq!(c.faults.stall_s, 0.75);
    }

    #[test]
    fn a_toml_part_is_a_profile_the_other_parts_override() {
        let a = SimArgs::from_spec("my-server.toml,seed=3").unwrap();
        assert_eq!(
            a.config.as_deref(),
            Some(std::path::Path::new("my-server.toml"))
        );
        assert_eq!(a.seed, Some(3));
        let a = SimArgs::from_spec("profile=calibrated").unwrap();
        assert_eq!(
            a.config.as_deref(),
            Some(std::path::Path::new("calibrated"))
        );
    }

    #[test]
    fn an_integer_option_rejects_a_fraction_naming_the_option_and_its_type() {
        let e = err("tp=1.5");
        assert_eq!(
            e,
            "invalid value for --sim: tp takes an integer >= 1, not '1.5'"
        );
        for (spec, key, takes) in [
            ("tp=0", "tp", "an integer >= 1"),
            ("max-num-seqs=2.5", "max-num-seqs", "an integer >= 1"),
            (
                "max-num-batched-tokens=1e4",
                "max-num-batched-tokens",
                "an integer >= 1",
            ),
            ("seed=-1", "seed", "an integer >= 0"),
            ("seed=0.5", "seed", "an integer >= 0"),
            // 2^32 GPUs does not fit the field: not silently wrapped.
            ("tp=4294967296", "tp", "an integer >= 1"),
            ("time-scale=0", "time-scale", "a number > 0"),
            ("time-scale=fast", "time-scale", "a number > 0"),
            (
                "gpu-memory-utilization=1.5",
                "gpu-memory-utilization",
                "a number in (0, 1]",
            ),
            (
                "fault-stall-duration=-1s",
                "fault-stall-duration",
                "a duration",
            ),
            (
                "fault-stall-duration=2 fortnights",
                "fault-stall-duration",
                "a duration",
            ),
            ("fault-500=1.5", "fault-500", "a rate between 0 and 1"),
            ("tp=", "tp", "an integer >= 1"),
        ] {
            let e = err(spec);
            assert!(
                e.starts_with(&format!("invalid value for --sim: {key} takes {takes}")),
                "{spec}: {e}"
            );
        }
    }

    #[test]
    fn unknown_words_and_options_list_what_is_valid() {
        let e = err("llama-3.1-8b,tp=1,warp=9");
        assert!(
            e.contains("unknown option 'warp'") && e.contains("tp, time-scale"),
            "{e}"
        );
        let e = err("gpt-5");
        assert!(
            e.contains("'gpt-5' is not a model")
                && e.contains("llama-3.1-70b")
                && e.contains("h100-sxm"),
            "{e}"
        );
        // The whole is still checked: 3 does not divide Llama-3.1-8B's heads.
        let e = SimArgs::from_spec("tp=3").unwrap().to_config().unwrap_err();
        assert!(e.to_string().contains("tensor_parallel"), "{e}");
        // Empty parts and spaces around them are ignored; no option is the default.
        assert_eq!(
            SimArgs::from_spec(" , ").unwrap().to_config().unwrap(),
            crate::SimConfig::default()
        );
    }

    /// Every option is a `goodput sim` flag (`tp` short for
    /// `tensor-parallel`), so the two cannot name different things.
    #[test]
    fn every_option_is_a_sim_flag() {
        let cmd = Cli::command();
        let flags: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
        for key in spec_keys() {
            let flag = if key == "tp" { "tensor-parallel" } else { key };
            assert!(
                flags.contains(&flag),
                "--sim {key} is not a goodput sim flag"
            );
        }
        let mut keys: Vec<&str> = spec_keys().collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), OPTIONS.len(), "a key is listed twice");
    }
}
