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
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", exact: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", exact: "1.7.4"),
    ],
    targets: [
        benchmark("EventStore", uses: ["LedgerCore", "LedgerStore"]),
        benchmark("Import", uses: ["LedgerCore", "LedgerStore"]),
        benchmark("Fold", uses: ["LedgerCore", "LedgerCodec"], local: ["FoldWorkload"]),
        benchmark("Decode", uses: ["LedgerCore", "LedgerAppStore"], local: ["TestFixtures"]),
        benchmark("Audit", uses: ["LedgerStore", "LedgerAPI"], local: ["AuditWorkload"]),
        // The root's test fixtures, which it does not ship as a product: `Support/TestFixtures` links to
        // `Tests/LedgerTestSupport`.
        .target(
            name: "TestFixtures",
            dependencies: [
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerCodec", package: root),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Support/TestFixtures",
            // Its byte surgery on stored records uses LedgerCodec's package-only reader and writer.
            exclude: ["EncodingSurgery.swift"]
        ),
        // The Fold benchmark's workload, and the same operations run under callgrind by instructions.sh.
        .target(
            name: "FoldWorkload",
            dependencies: [.product(name: "LedgerCore", package: root), .product(name: "LedgerCodec", package: root)]
        ),
        .executableTarget(
            name: "fold-instructions",
            dependencies: [
                "FoldWorkload", .product(name: "LedgerCore", package: root), .product(name: "LedgerCodec", package: root),
            ]
        ),
        // The Audit benchmark's ledger (a million events of Apple's documents, cached under /tmp), and the tool that
        // prints its directory for timing the CLI by hand.
        .target(
            name: "AuditWorkload",
            dependencies: [
                "TestFixtures",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerAppStore", package: root),
                .product(name: "LedgerIngest", package: root),
                .product(name: "LedgerStore", package: root),
            ]
        ),
        .executableTarget(name: "audit-ledger", dependencies: ["AuditWorkload"]),
    ]
)

/// One ordo-one/benchmark target: `Benchmarks/<name>/`, the benchmark library, the root's `products` and this
/// package's `local` targets. (The plugin only finds targets whose folder's parent is named exactly `Benchmarks`.)
func benchmark(_ name: String, uses products: [String], local: [String] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: [.product(name: "Benchmark", package: "benchmark")]
            + products.map { .product(name: $0, package: root) } + local.map { .target(name: $0) },
        path: "Benchmarks/\(name)",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
}
