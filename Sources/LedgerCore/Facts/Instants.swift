// Instants come from outside (Apple, callers, ledgers written by older builds), so arithmetic on them must not
// trap: an instant near the ends of Int64 saturates instead of overflowing.

extension UnixMillis {
    /// `self + other`, clamped to the representable range.
    @inline(__always)
    func saturatingAdd(_ other: UnixMillis) -> UnixMillis {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, clamped to the representable range.
    @inline(__always)
    func saturatingSubtract(_ other: UnixMillis) -> UnixMillis {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other > 0 ? .min : .max) : difference
    }

    /// `self * other`, clamped to the representable range.
    @inline(__always)
    func saturatingMultiply(_ other: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) == (other < 0) ? .max : .min
    }
}
