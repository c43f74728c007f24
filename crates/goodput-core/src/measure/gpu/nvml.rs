//! The local GPUs through NVML (`--nvml`), loaded at run time: goodput has
//! no link-time dependency on the NVIDIA driver, and a machine without it
//! gets a message saying so. Each scrape reads, per device, what a DCGM
//! exporter would serve ([`super`]): power (`nvmlDeviceGetPowerUsage`,
//! mW), the energy counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ since
//! the driver loaded; Volta and later), utilisation, memory used and the SM
//! clock. A reading the device does not support is left out, not 0.
//!
//! The NVML calls are C functions of the driver's `libnvidia-ml.so.1`,
//! looked up by name (`dlsym`) with the signatures of NVML's `nvml.h`; NVML
//! is safe to call from any thread.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use super::reading::{GpuId, GpuReading};

type Device = *mut c_void;
type Ret = c_int;
const SUCCESS: Ret = 0;
const CLOCK_SM: c_uint = 1;

#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[repr(C)]
#[derive(Default)]
struct Memory {
    total: u64,
    free: u64,
    used: u64,
}

/// The NVML functions goodput calls.
struct Fns {
    shutdown: unsafe extern "C" fn() -> Ret,
    name: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> Ret,
    uuid: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> Ret,
    power: unsafe extern "C" fn(Device, *mut c_uint) -> Ret,
    energy: unsafe extern "C" fn(Device, *mut u64) -> Ret,
    utilization: unsafe extern "C" fn(Device, *mut Utilization) -> Ret,
    memory: unsafe extern "C" fn(Device, *mut Memory) -> Ret,
    clock: unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> Ret,
}

/// NVML, initialised, with its devices.
pub(crate) struct Nvml {
    lib: *mut c_void,
    fns: Fns,
    devices: Vec<(GpuId, Device)>,
}

// NVML's handles and functions may be used from any thread.
unsafe impl Send for Nvml {}
unsafe impl Sync for Nvml {}

/// `dlerror()`'s message.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

/// The symbol `name` of `lib` as a function of type `F`.
///
/// # Safety
/// `F` must be the C signature NVML gives `name`.
unsafe fn symbol<F: Copy>(lib: *mut c_void, name: &CStr) -> Result<F, String> {
    let p = libc::dlsym(lib, name.as_ptr());
    if p.is_null() {
        return Err(format!(
            "NVML has no {}: {}",
            name.to_string_lossy(),
            dl_error()
        ));
    }
    Ok(std::mem::transmute_copy(&p))
}

/// A string NVML writes into a buffer.
fn text(f: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> Ret, d: Device) -> Option<String> {
    let mut buf = [0 as c_char; 96];
    // SAFETY: the buffer's length is passed; NVML NUL-terminates it.
    let ok = unsafe { f(d, buf.as_mut_ptr(), buf.len() as c_uint) } == SUCCESS;
    // SAFETY: on success the buffer holds a NUL-terminated string.
    ok.then(|| {
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    })
}

/// This machine's name, for the GPUs' node.
fn hostname() -> String {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the buffer's length is passed.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr(), buf.len()) } == 0;
    buf[255] = 0;
    match ok {
        // SAFETY: NUL-terminated above.
        true => unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
        false => "localhost".into(),
    }
}

impl Nvml {
    /// Load the driver's NVML and list its devices.
    pub(crate) fn open() -> Result<Nvml, String> {
        // SAFETY: dlopen of a C library by name; its constructors are the driver's.
        let lib = unsafe { libc::dlopen(c"libnvidia-ml.so.1".as_ptr(), libc::RTLD_NOW) };
        if lib.is_null() {
            return Err(format!(
                "NVML could not be loaded ({}): --nvml needs the NVIDIA driver on this machine (libnvidia-ml.so.1); elsewhere, scrape a DCGM exporter with --gpu-metrics URL",
                dl_error()
            ));
        }
        // SAFETY: each symbol is given its signature from nvml.h.
        unsafe {
            let init: unsafe extern "C" fn() -> Ret = symbol(lib, c"nvmlInit_v2")?;
            let count: unsafe extern "C" fn(*mut c_uint) -> Ret =
                symbol(lib, c"nvmlDeviceGetCount_v2")?;
            let handle: unsafe extern "C" fn(c_uint, *mut Device) -> Ret =
                symbol(lib, c"nvmlDeviceGetHandleByIndex_v2")?;
            let fns = Fns {
                shutdown: symbol(lib, c"nvmlShutdown")?,
                name: symbol(lib, c"nvmlDeviceGetName")?,
                uuid: symbol(lib, c"nvmlDeviceGetUUID")?,
                power: symbol(lib, c"nvmlDeviceGetPowerUsage")?,
                energy: symbol(lib, c"nvmlDeviceGetTotalEnergyConsumption")?,
                utilization: symbol(lib, c"nvmlDeviceGetUtilizationRates")?,
                memory: symbol(lib, c"nvmlDeviceGetMemoryInfo")?,
                clock: symbol(lib, c"nvmlDeviceGetClockInfo")?,
            };
            let r = init();
            if r != SUCCESS {
                return Err(format!("nvmlInit failed (NVML error {r})"));
            }
            let mut n: c_uint = 0;
            if count(&mut n) != SUCCESS || n == 0 {
                (fns.shutdown)();
                return Err("NVML sees no GPU on this machine".into());
            }
            let node = hostname();
            let mut devices = Vec::new();
            for i in 0..n {
                let mut d: Device = std::ptr::null_mut();
                if handle(i, &mut d) != SUCCESS {
                    continue;
                }
                let id = GpuId {
                    node: node.clone(),
                    gpu: i.to_string(),
                    uuid: text(fns.uuid, d),
                    model: text(fns.name, d),
                };
                devices.push((id, d));
            }
            Ok(Nvml { lib, fns, devices })
        }
    }

    /// Every device's readings now.
    pub(crate) fn read(&self) -> BTreeMap<GpuId, GpuReading> {
        let f = &self.fns;
        let mut out = BTreeMap::new();
        for (id, d) in &self.devices {
            let d = *d;
            let (mut mw, mut mj, mut clock) = (0 as c_uint, 0u64, 0 as c_uint);
            let (mut util, mut mem) = (Utilization::default(), Memory::default());
            // SAFETY: each call writes one value of the type nvml.h gives it.
            let reading = unsafe {
                GpuReading {
                    power_w: ((f.power)(d, &mut mw) == SUCCESS).then(|| f64::from(mw) / 1e3),
                    energy_mj: ((f.energy)(d, &mut mj) == SUCCESS).then_some(mj as f64),
                    util_pct: ((f.utilization)(d, &mut util) == SUCCESS)
                        .then(|| f64::from(util.gpu)),
                    fb_used_mib: ((f.memory)(d, &mut mem) == SUCCESS)
                        .then(|| mem.used as f64 / (1024.0 * 1024.0)),
                    sm_clock_mhz: ((f.clock)(d, CLOCK_SM, &mut clock) == SUCCESS)
                        .then(|| f64::from(clock)),
                }
            };
            out.insert(id.clone(), reading);
        }
        out
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: initialised in `open`; the library stays loaded until here.
        unsafe {
            (self.fns.shutdown)();
            libc::dlclose(self.lib);
        }
    }
}

#[cfg(test)]
mod tests {
    /// Without the driver, the message says what --nvml needs.
    #[test]
    fn a_machine_without_the_driver_is_told_so() {
        if let Err(e) = super::Nvml::open() {
            assert!(e.contains("NVML") && e.contains("--gpu-metrics"), "{e}");
        }
    }
}
