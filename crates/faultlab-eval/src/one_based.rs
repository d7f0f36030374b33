//! Indexes that are 0-based in memory and counted from 1 in `report.json`, as every report, run folder and
//! `replay --run` counts them (`#1` is the first). A 0 read back is refused (a report written before the count
//! started at 1), rather than read as another index.

use serde::{Deserialize, Deserializer, Serializer, de::Error, ser::Error as _};

pub fn serialize<T: Copy + TryInto<u64>, S: Serializer>(index: &T, serializer: S) -> Result<S::Ok, S::Error> {
    let index: u64 = (*index).try_into().map_err(|_| S::Error::custom("an index out of range"))?;
    serializer.serialize_u64(index.saturating_add(1))
}

pub fn deserialize<'de, T: TryFrom<u64>, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    let counted = u64::deserialize(deserializer)?;
    let index = counted
        .checked_sub(1)
        .ok_or_else(|| D::Error::custom("counts from 1 (a report written before it did: run it again)"))?;
    T::try_from(index).map_err(|_| D::Error::custom(format!("{counted} is out of range")))
}
