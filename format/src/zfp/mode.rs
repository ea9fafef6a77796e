//! The compression a writer asks zfp for ([`ZfpMode`]) and the parameters zfp derives from it for an array of
//! a given type and rank (what `zfp_stream_set_rate`, `_precision`, `_accuracy`, `_reversible` and
//! `_params` set), checked before anything is written.

use super::{Params, Scalar, MAX_BITS, MAX_PREC};
use crate::error::{invalid, Result};

/// How the H5Z-ZFP filter (32013) compresses a dataset's chunks, as `hdf5plugin.Zfp(...)` names the modes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZfpMode {
    /// Fixed rate: this many bits per value (every block of `4^d` values takes `round(4^d * rate)` bits).
    Rate(f64),
    /// Fixed precision: this many bit planes (1 to 64) per block.
    Precision(u32),
    /// Fixed accuracy: an absolute error within this tolerance (floats only).
    Accuracy(f64),
    /// Lossless: the values come back bit for bit.
    Reversible,
    /// zfp's expert mode: the bits per block (`minbits` to `maxbits`), the most bit planes (`maxprec`) and
    /// the smallest exponent kept (`minexp`).
    Expert {
        minbits: u32,
        maxbits: u32,
        maxprec: u32,
        minexp: i32,
    },
}

/// `frexp`'s exponent of a positive finite `x` (`x = m 2^e`, `1/2 <= m < 1`).
fn frexp_exp(x: f64) -> i32 {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: the highest set bit h of the mantissa gives x in [2^(h-1074), 2^(h-1073)).
        let h = 63 - (bits & 0x000f_ffff_ffff_ffff).leading_zeros() as i32;
        h - 1073
    } else {
        biased - 1022
    }
}

impl ZfpMode {
    /// The mode of a dataset's H5Z-ZFP client data `cd`: [`ZfpMode::Reversible`] for a lossless stream, else
    /// [`ZfpMode::Expert`] with the stream's exact parameters (which encode new chunks as the old ones were).
    pub fn of_client_data(cd: &[u32]) -> Result<ZfpMode> {
        let (_, p, _) = super::header::h5z_stream(cd)?;
        Ok(if p.reversible() {
            ZfpMode::Reversible
        } else {
            ZfpMode::Expert {
                minbits: p.minbits,
                maxbits: p.maxbits,
                maxprec: p.maxprec,
                minexp: p.minexp,
            }
        })
    }

    /// zfp's parameters for blocks of `dims` (1 to 4) dimensions of `scalar`, or an Invalid error naming
    /// what zfp or H5Z-ZFP would not accept.
    pub(crate) fn params(self, scalar: Scalar, dims: u32) -> Result<Params> {
        let float = matches!(scalar, Scalar::F32 | Scalar::F64);
        match self {
            ZfpMode::Rate(rate) => {
                if !(rate.is_finite() && rate > 0.0) {
                    return invalid(format!("zfp rate {rate}: must be a positive number"));
                }
                let n = f64::from(1u32 << (2 * dims));
                let bits = (n * rate + 0.5).floor();
                let least = match scalar {
                    Scalar::F32 => 9.0,
                    Scalar::F64 => 12.0,
                    _ => 1.0,
                };
                let bits = bits.max(least);
                if bits > f64::from(MAX_BITS) {
                    return invalid(format!(
                        "zfp rate {rate}: {bits} bits per {dims}-D block, above zfp's {MAX_BITS}"
                    ));
                }
                Ok(Params::rate(bits as u32))
            }
            ZfpMode::Precision(prec) => {
                if !(1..=MAX_PREC).contains(&prec) {
                    return invalid(format!("zfp precision {prec}: must be 1 to {MAX_PREC}"));
                }
                Ok(Params::precision(prec))
            }
            ZfpMode::Accuracy(tol) => {
                if !float {
                    return invalid(format!(
                        "zfp accuracy mode on {scalar:?} values: only floats have a tolerance"
                    ));
                }
                if !(tol.is_finite() && tol > 0.0) {
                    return invalid(format!("zfp accuracy {tol}: must be a positive number"));
                }
                // 2^minexp <= tol < 2^(minexp + 1).
                Ok(Params::accuracy(frexp_exp(tol) - 1))
            }
            ZfpMode::Reversible => Ok(Params::reversible_mode()),
            ZfpMode::Expert {
                minbits,
                maxbits,
                maxprec,
                minexp,
            } => {
                if minbits > maxbits || !(1..=MAX_BITS).contains(&maxbits) {
                    return invalid(format!(
                        "zfp expert bits {minbits} to {maxbits}: need minbits <= maxbits <= {MAX_BITS}"
                    ));
                }
                if !(1..=MAX_PREC).contains(&maxprec) {
                    return invalid(format!(
                        "zfp expert maxprec {maxprec}: must be 1 to {MAX_PREC}"
                    ));
                }
                if !(-16_495..=16_272).contains(&minexp) {
                    return invalid(format!("zfp expert minexp {minexp} out of zfp's range"));
                }
                Ok(Params {
                    minbits,
                    maxbits,
                    maxprec,
                    minexp,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_give_zfps_parameters() {
        let p = ZfpMode::Rate(8.0).params(Scalar::F32, 2).unwrap();
        assert_eq!((p.minbits, p.maxbits), (128, 128));
        // At least the sign bit and exponent of a float block.
        assert_eq!(
            ZfpMode::Rate(0.1).params(Scalar::F64, 1).unwrap().maxbits,
            12
        );
        assert_eq!(
            ZfpMode::Rate(9.5).params(Scalar::I32, 1).unwrap().maxbits,
            38
        );
        assert_eq!(
            ZfpMode::Accuracy(1e-3)
                .params(Scalar::F64, 3)
                .unwrap()
                .minexp,
            -10
        );
        assert_eq!(
            ZfpMode::Accuracy(0.25)
                .params(Scalar::F32, 3)
                .unwrap()
                .minexp,
            -2
        );
        assert_eq!(
            ZfpMode::Accuracy(5e-324)
                .params(Scalar::F64, 1)
                .unwrap()
                .minexp,
            -1074
        );
        assert!(ZfpMode::Reversible
            .params(Scalar::I64, 4)
            .unwrap()
            .reversible());
        for bad in [
            ZfpMode::Rate(0.0),
            ZfpMode::Rate(f64::NAN),
            ZfpMode::Rate(100.0),
            ZfpMode::Precision(0),
            ZfpMode::Precision(65),
            ZfpMode::Accuracy(-1.0),
            ZfpMode::Expert {
                minbits: 10,
                maxbits: 5,
                maxprec: 64,
                minexp: 0,
            },
        ] {
            let e = bad.params(Scalar::F64, 4).unwrap_err();
            assert!(e.to_string().contains("zfp"), "{e}");
        }
        let e = ZfpMode::Accuracy(0.1).params(Scalar::I32, 1).unwrap_err();
        assert!(e.to_string().contains("only floats"), "{e}");
    }

    #[test]
    fn client_data_gives_back_a_mode_that_encodes_alike() {
        use crate::zfp::h5z_write::h5z_client_data;
        let cd = h5z_client_data(ZfpMode::Reversible, Scalar::F64, &[8, 8]).unwrap();
        assert_eq!(ZfpMode::of_client_data(&cd).unwrap(), ZfpMode::Reversible);
        for mode in [
            ZfpMode::Rate(8.0),
            ZfpMode::Precision(12),
            ZfpMode::Accuracy(1e-3),
        ] {
            let cd = h5z_client_data(mode, Scalar::F32, &[16, 4]).unwrap();
            let back = ZfpMode::of_client_data(&cd).unwrap();
            assert!(matches!(back, ZfpMode::Expert { .. }), "{back:?}");
            assert_eq!(h5z_client_data(back, Scalar::F32, &[16, 4]).unwrap(), cd);
        }
        assert!(ZfpMode::of_client_data(&[]).is_err());
    }
}
