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
        .executableTarget(
            name: "EventStore",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerStore", package: root),
            ],
            path: "Benchmarks/EventStore",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Import",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerStore", package: root),
            ],
            path: "Benchmarks/Import",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Fold",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "LedgerCore", package: root),
            ],
            path: "Benchmarks/Fold",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Decode",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerAppStore", package: root),
                .product(name: "LedgerTestSupport", package: root),
            ],
            path: "Benchmarks/Decode",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
