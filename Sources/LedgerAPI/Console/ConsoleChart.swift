import LedgerCore

/// A chart of the console, drawn on the server as SVG, as the timeline pictures are: no script and no chart library,
/// so the page works without JavaScript, makes no request of its own, and its bytes are the same for the same figures
/// (a test can compare them). Every chart carries its title and a description for screen readers, and the console
/// shows its figures as a table beside it.
struct ConsoleChart {
    struct Series {
        var name: String
        /// A CSS class of the console's style (`s1` … `s4`), which sets the colour and the dash pattern.
        var style: String
        var values: [Int64]
    }

    enum Kind { case lines, bars }

    var title: String
    var kind: Kind
    /// Each point's bucket start, for the axis.
    var starts: [UnixMillis]
    var series: [Series]
    /// How a value is written on the axis (amounts in milliunits are divided by 1000).
    var format: (Int64) -> String = { String($0) }

    static let width = 720.0
    static let height = 220.0
    static let left = 64.0
    static let right = 16.0
    static let top = 28.0
    static let bottom = 36.0

    var svg: String {
        let plotWidth = Self.width - Self.left - Self.right
        let plotHeight = Self.height - Self.top - Self.bottom
        let count = max(1, starts.count)
        let maximum = max(1, series.flatMap(\.values).max() ?? 1)
        let minimum = min(0, series.flatMap(\.values).min() ?? 0)
        let span = Double(maximum - minimum)
        func y(_ v: Int64) -> Double { Self.top + plotHeight * (1 - Double(v - minimum) / span) }
        func x(_ i: Int) -> Double { Self.left + plotWidth * (Double(i) + 0.5) / Double(count) }

        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" class=\"chart\" "
        s += "viewBox=\"0 0 \(Self.width.svg) \(Self.height.svg)\" aria-labelledby=\"\(id)-t \(id)-d\" "
        s += "data-points=\"\(starts.count)\" data-series=\"\(series.count)\">\n"
        s += "<title id=\"\(id)-t\">\(xmlEscaped(title))</title>\n"
        s += "<desc id=\"\(id)-d\">\(xmlEscaped(description))</desc>\n"
        // Grid and axis: four steps from the minimum to the maximum.
        for step in 0...4 {
            let v = minimum + Int64((Double(maximum - minimum) * Double(step) / 4).rounded())
            let gy = y(v)
            s += "<line class=\"grid\" x1=\"\(Self.left.svg)\" x2=\"\((Self.width - Self.right).svg)\" y1=\"\(gy.svg)\" y2=\"\(gy.svg)\"/>"
            s += "<text class=\"axis\" x=\"\((Self.left - 6).svg)\" y=\"\((gy + 4).svg)\" text-anchor=\"end\">\(xmlEscaped(format(v)))</text>\n"
        }
        // At most eight labels along the bottom.
        let every = max(1, (count + 7) / 8)
        for (i, start) in starts.enumerated() where i % every == 0 {
            s += "<text class=\"axis\" x=\"\(x(i).svg)\" y=\"\((Self.height - Self.bottom + 16).svg)\" text-anchor=\"middle\">"
            s += "\(CivilTime(start).iso.prefix(10))</text>\n"
        }
        switch kind {
        case .lines:
            for line in series {
                let points = line.values.enumerated().map { "\(x($0.offset).svg),\(y($0.element).svg)" }.joined(separator: " ")
                s += "<polyline class=\"line \(line.style)\" fill=\"none\" points=\"\(points)\"><title>\(xmlEscaped(line.name))</title></polyline>\n"
            }
        case .bars:
            let slot = plotWidth / Double(count)
            let barWidth = max(1, slot * 0.8 / Double(max(1, series.count)))
            for (k, bars) in series.enumerated() {
                for (i, v) in bars.values.enumerated() {
                    let bx = Self.left + slot * Double(i) + slot * 0.1 + barWidth * Double(k)
                    let top = y(max(v, 0))
                    let height = max(0, y(min(v, 0)) - top)
                    s += "<rect class=\"bar \(bars.style)\" x=\"\(bx.svg)\" y=\"\(top.svg)\" width=\"\(barWidth.svg)\" height=\"\(height.svg)\">"
                    s += "<title>\(xmlEscaped(bars.name)) \(CivilTime(starts[i]).iso.prefix(10)): \(xmlEscaped(format(v)))</title></rect>\n"
                }
            }
        }
        // The legend.
        var lx = Self.left
        for line in series {
            s += "<rect class=\"key \(line.style)\" x=\"\(lx.svg)\" y=\"8\" width=\"12\" height=\"12\"/>"
            s += "<text class=\"legend\" x=\"\((lx + 16).svg)\" y=\"18\">\(xmlEscaped(line.name))</text>\n"
            lx += 28 + Double(line.name.count) * 7
        }
        s += "</svg>"
        return s
    }

    /// The element ids inside the chart, from its title (a page holds several charts).
    var id: String {
        "c-" + String(title.lowercased().unicodeScalars.map { ("a"..."z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "-" })
    }

    /// What a screen reader says of the chart: its series and their last values.
    var description: String {
        let last = series.map { "\($0.name) \($0.values.last.map(format) ?? "none")" }.joined(separator: ", ")
        let range = starts.first.map { "from \(CivilTime($0).iso.prefix(10))" } ?? "no data"
        return "\(title), \(starts.count) points \(range); latest: \(last)."
    }
}
