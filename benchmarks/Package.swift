// swift-tools-version: 6.1
import Foundation
import PackageDescription

// The root package is a path dependency, known by its folder's name; a clone may be named anything, so derive it.
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "StoreLedgerBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        benchmark("EventStore", uses: ["LedgerCore", "LedgerStore"]),
        benchmark("Import", uses: ["LedgerCore", "LedgerStore"]),
        benchmark("Fold", uses: ["LedgerCore", "LedgerCodec"]),
        benchmark("Decode", uses: ["LedgerCore", "LedgerAppStore", "LedgerTestSupport"]),
    ]
)

/// One ordo-one/benchmark target: `Benchmarks/<name>/`, the benchmark library, and the root's `products`. (The plugin
/// only finds targets whose folder's parent is named exactly `Benchmarks`.)
func benchmark(_ name: String, uses products: [String]) -> Target {
    .executableTarget(
        name: name,
        dependencies: [.product(name: "Benchmark", package: "benchmark")]
            + products.map { .product(name: $0, package: root) },
        path: "Benchmarks/\(name)",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
}
