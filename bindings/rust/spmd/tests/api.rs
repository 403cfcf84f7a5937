//! The safe API end to end, values checked.
use std::sync::Mutex;

use spmd::ops::{self, DotDims, OpOptions};
use spmd::{
    Array, BinaryOp, Collective, CollectiveKind, CollectiveOptions, DType, Distributed, Key, MemoryKind, Mesh,
    Platform, ReduceOp, Runtime, ShardMapOptions, Sharding, ShardingKind, Spec, Status, UnaryOp, VisualizeOptions,
};

fn runtime(devices: usize) -> Runtime {
    Runtime::builder()
        .platform(Platform::Cpu)
        .cpu_devices(devices)
        .worker_threads(1)
        .device_cache_bytes(-1)
        .build()
        .unwrap()
}

fn opts() -> OpOptions<'static> {
    OpOptions::default()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5 * (1.0 + y.abs()))
}

#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Runtime>();
    send_sync::<Mesh>();
    send_sync::<Spec>();
    send_sync::<Sharding>();
    send_sync::<Array>();
    send_sync::<Collective>();
    send_sync::<Key>();
}

#[test]
fn runtime_devices_and_version() {
    let rt = runtime(4);
    assert_eq!(rt.device_count().unwrap(), 4);
    assert_eq!(rt.platform().unwrap(), Platform::Cpu);
    let info = rt.device_info(2).unwrap();
    assert_eq!((info.id, info.platform, info.platform_name.as_str()), (2, Platform::Cpu, "cpu"));
    assert_eq!((info.process_index, info.local_index), (0, 2));
    assert_eq!((info.memory_bytes, info.compute_capability), (0, 0));
    assert_eq!(rt.device_string(3).unwrap(), "CpuDevice(id=3)");
    assert_eq!(rt.devices_string().unwrap(), "[CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2), CpuDevice(id=3)]");
    assert_eq!(rt.device_string(4).unwrap_err().status, Status::OutOfRange);
    // One process holds every device.
    assert_eq!((rt.process_index().unwrap(), rt.process_count().unwrap()), (0, 1));
    assert_eq!(rt.local_device_count().unwrap(), 4);
    let one = Runtime::builder().cpu_devices(2).distributed(Distributed::None).exact_reductions(true).build().unwrap();
    assert_eq!(one.process_count().unwrap(), 1);
    assert_eq!(spmd::version(), spmd::sys::SPMD_VERSION_NUMBER as u32);
    assert_eq!(spmd::version_string(), spmd::sys::SPMD_VERSION_STRING);
    let e = Runtime::builder().cpu_devices(5000).build().unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert_eq!(Status::Timeout.description(), Status::Timeout.to_string());
    assert_eq!(Status::from_raw(Status::Unsupported.to_raw()), Some(Status::Unsupported));
    assert_eq!(Status::from_raw(spmd::sys::SPMD_OK), None);
}

#[test]
fn dtypes() {
    let all = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::U16,
        DType::U32,
    ];
    let sizes = [4, 8, 2, 2, 4, 8, 1, 1, 1, 2, 2, 4];
    for (d, size) in all.iter().zip(sizes) {
        assert_eq!(d.size(), size);
        assert_eq!(DType::from_name(d.name()).unwrap(), *d);
        assert_eq!(d.name().parse::<DType>().unwrap(), *d);
    }
    assert_eq!(DType::BF16.to_string(), "bfloat16");
    let e = DType::from_name("float99").unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("float99"), "{e}");
}

#[test]
fn meshes() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[2, 2], &["x", "y"]).unwrap();
    assert_eq!(mesh.ndim().unwrap(), 2);
    assert_eq!(mesh.size().unwrap(), 4);
    assert_eq!(mesh.axis_names().unwrap(), vec!["x", "y"]);
    assert_eq!(mesh.shape().unwrap(), vec![2, 2]);
    assert_eq!(mesh.axis_index("y").unwrap(), 1);
    assert_eq!(mesh.device_at(&[1, 0]).unwrap(), 2);
    assert_eq!(mesh.device_coords(3).unwrap(), vec![1, 1]);
    assert_eq!(mesh.devices().unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(mesh.to_string(), "Mesh('x': 2, 'y': 2)");
    let reversed = Mesh::with_devices(&rt, &[2, 2], &["x", "y"], &[3, 2, 1, 0]).unwrap();
    assert_eq!(reversed.devices().unwrap(), vec![3, 2, 1, 0]);
    assert!(mesh != reversed);
    assert!(mesh == Mesh::new(&rt, &[2, 2], &["x", "y"]).unwrap());
    assert_eq!(mesh.axis_index("z").unwrap_err().status, Status::InvalidArgument);
    assert_eq!(mesh.axis_size(2).unwrap_err().status, Status::OutOfRange);
    assert_eq!(Mesh::new(&rt, &[2], &["x", "y"]).unwrap_err().status, Status::InvalidArgument);
    assert!(Mesh::with_devices(&rt, &[2], &["x"], &[0]).is_err());
}

#[test]
fn specs() {
    let spec = Spec::parse("x, None").unwrap();
    assert_eq!(spec.ndim().unwrap(), 2);
    assert_eq!(spec.dims().unwrap(), vec![vec!["x".to_string()], vec![]]);
    assert_eq!(spec.to_string(), "PartitionSpec('x', None)");
    let mut built = Spec::new().unwrap();
    built.append(&["x"]).unwrap();
    assert!(built == spec, "trailing Nones do not count");
    built.append(&[]).unwrap();
    assert_eq!(built.ndim().unwrap(), 2);
    let pair: Spec = "P(('x', 'y'),)".parse().unwrap();
    assert_eq!(pair.dim(0).unwrap(), vec!["x", "y"]);
    assert!(pair == Spec::from_dims(&[&["x", "y"]]).unwrap());
    assert_eq!(Spec::parse("").unwrap().to_string(), "PartitionSpec()");
}

#[test]
fn shardings() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[2, 2], &["x", "y"]).unwrap();
    let spec = Spec::parse("x").unwrap();
    let named = Sharding::named(&mesh, &spec).unwrap();
    assert_eq!(named.kind().unwrap(), ShardingKind::Named);
    assert!(named == Sharding::named_text(&mesh, "P('x', None)").unwrap());
    assert!(named.mesh().unwrap() == mesh);
    assert!(named.spec().unwrap() == spec);
    assert_eq!(named.device_count().unwrap(), 4);
    assert!(!named.is_fully_replicated().unwrap());
    assert!(Sharding::replicated(&mesh).unwrap().is_fully_replicated().unwrap());
    assert_eq!(
        named.to_string(),
        "NamedSharding(mesh=Mesh('x': 2, 'y': 2), spec=PartitionSpec('x',), memory_kind=device)"
    );
    let info = named.shard_info(&[4, 6], 3).unwrap();
    assert_eq!((info.device, info.replica_id), (3, 1));
    assert_eq!((info.start.clone(), info.stop.clone(), info.local_shape.clone()), (vec![2, 0], vec![4, 6], vec![2, 6]));
    assert_eq!(info.len(), 12);
    assert_eq!(named.shard_info_of_device(&[4, 6], 1).unwrap().start, vec![0, 0]);
    let single = Sharding::single_device(&rt, 2).unwrap();
    assert_eq!(single.kind().unwrap(), ShardingKind::SingleDevice);
    assert_eq!(single.to_string(), "SingleDeviceSharding(device=CpuDevice(id=2), memory_kind=device)");
    let pic = named.visualize(&[4, 6], &VisualizeOptions { ascii: true, ..Default::default() }).unwrap();
    assert!(pic.contains("CPU 0,1") && pic.contains('+'), "{pic}");
}

#[test]
fn arrays_of_every_element_type() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[4], &["x"]).unwrap();
    let s = Sharding::named_text(&mesh, "x").unwrap();
    let f: Vec<f32> = (0..8).map(|i| i as f32 * 0.5).collect();
    assert_eq!(Array::from_host(&s, &[8], &f).unwrap().to_host::<f32>().unwrap(), f);
    let d: Vec<f64> = (0..8).map(|i| i as f64 / 3.0).collect();
    assert_eq!(Array::from_host(&s, &[8], &d).unwrap().to_host::<f64>().unwrap(), d);
    let i: Vec<i32> = (-4..4).collect();
    assert_eq!(Array::from_host(&s, &[8], &i).unwrap().to_host::<i32>().unwrap(), i);
    let l: Vec<i64> = (0..8).map(|x| x << 40).collect();
    assert_eq!(Array::from_host(&s, &[8], &l).unwrap().to_host::<i64>().unwrap(), l);
    let u: Vec<u8> = (250..=255).chain(0..2).collect();
    assert_eq!(Array::from_host(&s, &[8], &u).unwrap().to_host::<u8>().unwrap(), u);
    let b: Vec<bool> = (0..8).map(|x| x % 3 == 0).collect();
    let ba = Array::from_host(&s, &[8], &b).unwrap();
    assert_eq!(ba.to_host::<bool>().unwrap(), b);
    assert_eq!(ba.dtype().unwrap(), DType::Bool);
    let bits: Vec<u16> = vec![0x3f80, 0x4000, 0xbf80, 0, 0x3f80, 0x4000, 0xbf80, 0]; // bfloat16 1, 2, -1, 0
    let h = Array::from_host_bits(&s, DType::BF16, &[8], &bits).unwrap();
    assert_eq!(h.to_host_bits().unwrap(), bits);
    assert_eq!(h.process_allgather_bits().unwrap(), bits);
    // This process's part of an array is all of it.
    assert_eq!(s.process_local_shape(&[8]).unwrap(), vec![8]);
    assert_eq!(s.process_local_shape(&[]).unwrap_err().status, Status::InvalidArgument);
    assert_eq!(Array::from_process_local_data(&s, &[8], &f).unwrap().to_host::<f32>().unwrap(), f);
    assert_eq!(
        Array::from_process_local_data_bits(&s, DType::BF16, &[8], &bits).unwrap().to_host_bits().unwrap(),
        bits
    );
    assert_eq!(Array::from_process_local_data(&s, &[8], &f[..7]).unwrap_err().status, Status::InvalidArgument);
    assert_eq!(ba.process_allgather::<bool>().unwrap(), b);
    assert_eq!(ops::astype(&h, DType::F32, &opts()).unwrap().to_host::<f32>().unwrap()[..3], [1.0, 2.0, -1.0]);
    assert!(Array::from_host_bits(&s, DType::F32, &[8], &bits).is_err());
}

/// int8, int16, uint16 and uint32 arrays round-trip, and promote, wrap and
/// sum as JAX's: int8 with uint8 meets in int16, uint8 sums give uint32, a
/// scalar past int8 is refused naming it.
#[test]
fn narrow_integer_arrays_follow_jax() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[4], &["x"]).unwrap();
    let s = Sharding::named_text(&mesh, "x").unwrap();
    let i8s: Vec<i8> = vec![100, -2, 127, -128];
    let a = Array::from_host(&s, &[4], &i8s).unwrap();
    assert_eq!(a.dtype().unwrap(), DType::I8);
    assert_eq!(a.to_host::<i8>().unwrap(), i8s);
    assert_eq!(a.repr().unwrap(), "Array([ 100,   -2,  127, -128], dtype=int8)");
    let i16s: Vec<i16> = vec![1, -2, i16::MAX, i16::MIN];
    assert_eq!(Array::from_host(&s, &[4], &i16s).unwrap().to_host::<i16>().unwrap(), i16s);
    let u16s: Vec<u16> = vec![1, 2, u16::MAX, 4];
    let b = Array::from_host(&s, &[4], &u16s).unwrap();
    assert_eq!(b.dtype().unwrap(), DType::U16);
    assert_eq!(b.to_host::<u16>().unwrap(), u16s);
    assert!(b.to_host_bits().is_err()); // uint16 is no float16
    let u32s: Vec<u32> = vec![1, 2, u32::MAX, 1 << 31];
    assert_eq!(Array::from_host(&s, &[4], &u32s).unwrap().to_host::<u32>().unwrap(), u32s);
    let wrapped = ops::binary(BinaryOp::Add, &a, &a, &opts()).unwrap();
    assert_eq!(wrapped.to_host::<i8>().unwrap(), vec![-56, -4, -2, 0]);
    let u8s = Array::from_host(&s, &[4], &[200u8, 2, 255, 0]).unwrap();
    let mixed = ops::binary(BinaryOp::Add, &a, &u8s, &opts()).unwrap();
    assert_eq!(mixed.to_host::<i16>().unwrap(), vec![300, 0, 382, -128]);
    let sum = ops::reduce(ReduceOp::Sum, &u8s, &[], false, &opts()).unwrap();
    assert_eq!(sum.to_host::<u32>().unwrap(), vec![457]);
    let big = ops::astype(&u8s, DType::U32, &opts()).unwrap();
    let neg = ops::scalar_binary(BinaryOp::Sub, 0.0, &big, &opts()).unwrap();
    assert_eq!(neg.to_host::<u32>().unwrap(), vec![4294967096, 4294967294, 4294967041, 0]);
    // A Python-style scalar becomes int8 as JAX converts it: 300 adds 44.
    let plus = ops::binary_scalar(BinaryOp::Add, &a, 300.0, &opts()).unwrap();
    assert_eq!(plus.to_host::<i8>().unwrap(), vec![-112, 42, -85, -84]);
    let e = ops::binary_scalar(BinaryOp::Add, &a, 2147483648.0, &opts()).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("is outside int32"), "{e}");
    assert_eq!(a.to_host::<u8>().unwrap_err().status, Status::InvalidArgument);
}

#[test]
fn array_accessors_shards_and_text() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[2, 2], &["x", "y"]).unwrap();
    let s = Sharding::named_text(&mesh, "x, y").unwrap();
    let mut a = Array::arange(&s, DType::F32, &[2, 4], 0.0, 1.0).unwrap();
    assert_eq!(a.shape().unwrap(), vec![2, 4]);
    assert_eq!((a.ndim().unwrap(), a.size().unwrap(), a.nbytes().unwrap()), (2, 8, 32));
    assert_eq!(a.dtype().unwrap(), DType::F32);
    assert!(a.sharding().unwrap() == s);
    a.block_until_ready().unwrap();
    assert_eq!(a.shard_count().unwrap(), 4);
    let shards = a.shards().unwrap();
    assert_eq!(shards[3].start, vec![1, 2]);
    assert_eq!(a.shard_info_of_device(2).unwrap().start, vec![1, 0]);
    assert_eq!(a.shard_read::<f32>(3).unwrap(), vec![6.0, 7.0]);
    a.shard_write(3, &[60.0f32, 70.0]).unwrap();
    assert_eq!(a.to_host::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 60.0, 70.0]);
    assert_eq!(a.to_string(), "[[ 0.  1.  2.  3.]\n [ 4.  5. 60. 70.]]");
    // One process holds every shard: process_allgather is to_host.
    assert!(a.is_fully_addressable().unwrap());
    assert_eq!(a.process_allgather::<f32>().unwrap(), a.to_host::<f32>().unwrap());
    assert_eq!(a.process_allgather::<i32>().unwrap_err().status, Status::InvalidArgument);
    assert_eq!(format!("{a:?}"), a.repr().unwrap());
    assert!(a.repr().unwrap().starts_with("Array([[ 0.,  1.,"));
    assert!(a.visualize().unwrap().contains("CPU 3"));
    assert!(a.device().is_err(), "a is spread over 4 devices");

    let replicated = a.reshard(&Sharding::replicated(&mesh).unwrap()).unwrap();
    assert_eq!(replicated.shard_read::<f32>(1).unwrap(), a.to_host::<f32>().unwrap());
    let z = Array::zeros(&s, DType::I32, &[2, 2]).unwrap();
    assert_eq!(z.to_host::<i32>().unwrap(), vec![0; 4]);
    let full = Array::full(&Sharding::single_device(&rt, 1).unwrap(), DType::I64, &[3], 7.9).unwrap();
    assert_eq!(full.to_host::<i64>().unwrap(), vec![7, 7, 7]);
    assert_eq!(full.device().unwrap(), 1);
    let scalar = Array::full(&Sharding::replicated(&mesh).unwrap(), DType::F32, &[], 276.0).unwrap();
    assert_eq!(scalar.repr().unwrap(), "Array(276., dtype=float32)");
    assert_eq!(scalar.to_string(), "276.0");
}

#[test]
fn arrays_from_single_device_arrays() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[2, 2], &["x", "y"]).unwrap();
    let s = Sharding::named_text(&mesh, "x, y").unwrap();
    let shape = [4usize, 6];
    let whole: Vec<f32> = (0..24).map(|i| i as f32).collect();
    // One single-device array per device holding its block, given in
    // reverse order: any order will do.
    let mut blocks = Vec::new();
    for i in (0..s.device_count().unwrap()).rev() {
        let info = s.shard_info(&shape, i).unwrap();
        let (row, cols) = (shape[1], info.start[1]..info.stop[1]);
        let block: Vec<f32> = (info.start[0]..info.stop[0])
            .flat_map(|r| whole[r * row + cols.start..r * row + cols.end].to_vec())
            .collect();
        let single = Sharding::single_device(&rt, info.device).unwrap();
        blocks.push(Array::from_host(&single, &info.local_shape, &block).unwrap());
    }
    let refs: Vec<&Array> = blocks.iter().collect();
    let a = Array::from_single_device_arrays(&s, DType::F32, &shape, &refs).unwrap();
    assert!(a.sharding().unwrap() == s);
    assert_eq!(a.to_host::<f32>().unwrap(), whole);
    // The blocks were copied: they stay the caller's and usable.
    assert_eq!(blocks[0].to_host::<f32>().unwrap(), a.shard_read::<f32>(3).unwrap());

    let err = Array::from_single_device_arrays(&s, DType::F32, &shape, &refs[..3]).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("count"), "{}", err.message);
}

#[test]
fn shards_through_dlpack() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[4], &["x"]).unwrap();
    let s = Sharding::named_text(&mesh, "x").unwrap();
    let a = Array::arange(&s, DType::F32, &[8], 0.0, 1.0).unwrap();
    let n = a.shard_count().unwrap();
    let tensors: Vec<spmd::DlpackTensor> = (0..n).map(|i| a.shard_to_dlpack(i).unwrap()).collect();
    let devices: Vec<usize> = (0..n).map(|i| a.shard_info(i).unwrap().device).collect();
    // The exports outlive the array: they hold its memory.
    drop(a);
    // Refused: the caller keeps the tensors.
    // SAFETY: live tensors from shard_to_dlpack.
    let err = unsafe { Array::from_dlpack(&s, DType::I32, &[8], &devices, &tensors) }.unwrap_err();
    assert!(err.message.contains("tensors[0]: of float32"), "{}", err.message);
    let err = unsafe { Array::from_dlpack(&s, DType::F32, &[8], &devices[..1], &tensors) }.unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    // Adopted back without a copy; dropping the array runs the deleters.
    let b = unsafe { Array::from_dlpack(&s, DType::F32, &[8], &devices, &tensors) }.unwrap();
    assert_eq!(b.to_host::<f32>().unwrap(), (0..8).map(|i| i as f32).collect::<Vec<_>>());
    drop(b);
    // A tensor not handed on is deleted by the caller.
    let c = Array::zeros(&s, DType::F32, &[8]).unwrap();
    let t = c.shard_to_dlpack(1).unwrap();
    // SAFETY: a live tensor, not used afterwards.
    unsafe { spmd::delete_dlpack(t) };
    assert_eq!(c.shard_to_dlpack(9).unwrap_err().status, Status::OutOfRange);
}

#[test]
fn checkpoint_save_and_load() {
    // A fresh directory under the system's temporary one, removed at the end.
    let dir = std::env::temp_dir().join(format!("spmd-rust-checkpoint-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rt = runtime(4);
    let grid = Mesh::new(&rt, &[2, 2], &["x", "y"]).unwrap();
    let a = Array::arange(&Sharding::named_text(&grid, "x, y").unwrap(), DType::F32, &[2, 4], 0.0, 1.0).unwrap();
    a.save(&dir).unwrap();
    // Restored under another sharding, on another mesh: the saved dtype,
    // shape and values.
    let line = Mesh::new(&rt, &[4], &["d"]).unwrap();
    let cols = Sharding::named_text(&line, "None, d").unwrap();
    let b = Array::load(&cols, &dir).unwrap();
    assert_eq!(b.dtype().unwrap(), DType::F32);
    assert_eq!(b.shape().unwrap(), vec![2, 4]);
    assert!(b.sharding().unwrap() == cols);
    assert_eq!(b.to_host::<f32>().unwrap(), a.to_host::<f32>().unwrap());
    assert_eq!(b.shard_read::<f32>(1).unwrap(), vec![1.0, 5.0]);
    // A directory holds one checkpoint.
    let err = b.save(dir.as_path()).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("already holds a checkpoint"), "{}", err.message);
    // Nothing to load, or a path C cannot take.
    assert_eq!(Array::load(&cols, dir.join("missing")).unwrap_err().status, Status::InvalidArgument);
    assert!(Array::load(&cols, "a\0b").unwrap_err().message.contains("NUL"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn random_numbers() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[4], &["x"]).unwrap();
    let split = Sharding::named_text(&mesh, "x").unwrap();
    let whole = Sharding::replicated(&mesh).unwrap();
    assert_eq!(Key::new(42).words(), [0, 42]);
    assert_eq!(Key::new(1 << 32).words(), [1, 0]);
    let key = Key::new(0);
    let three = key.split(3);
    assert_eq!(three.len(), 3);
    assert_eq!(key.split(2)[..], three[..2], "key i is the same for every n > i");
    assert!(key.fold_in(1) != key.fold_in(2));
    assert_eq!(Key::from_words(three[1].words()), three[1]);
    let u1 = key.uniform(&split, DType::F32, &[16], 0.0, 1.0).unwrap().to_host::<f32>().unwrap();
    let u2 = key.uniform(&whole, DType::F32, &[16], 0.0, 1.0).unwrap().to_host::<f32>().unwrap();
    assert_eq!(u1, u2, "values do not depend on the sharding");
    assert!(u1.iter().all(|&v| (0.0..1.0).contains(&v)));
    let bits = key.bits(&split, DType::U8, &[8]).unwrap();
    assert_eq!(bits.dtype().unwrap(), DType::U8);
    let n = key.normal(&split, DType::F64, &[8]).unwrap().to_host::<f64>().unwrap();
    assert!(n.iter().all(|v| v.is_finite()));
    let t = key.truncated_normal(&split, DType::F32, &[64], -1.0, 1.0).unwrap().to_host::<f32>().unwrap();
    assert!(t.iter().all(|&v| v > -1.0 && v < 1.0));
    assert_eq!(key.bits(&split, DType::F32, &[4]).unwrap_err().status, Status::InvalidArgument);
}

#[test]
fn global_ops() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[2, 2], &["x", "y"]).unwrap();
    let s = Sharding::named_text(&mesh, "x, y").unwrap();
    let x = Array::arange(&s, DType::F32, &[2, 4], 1.0, 1.0).unwrap(); // [[1 2 3 4] [5 6 7 8]]
    let host = x.to_host::<f32>().unwrap();

    let sin = ops::unary(UnaryOp::Sin, &x, &opts()).unwrap();
    assert!(close(&sin.to_host::<f32>().unwrap(), &host.iter().map(|v| v.sin()).collect::<Vec<_>>()));
    assert!(sin.sharding().unwrap() == s);
    let sig = ops::unary(UnaryOp::SIGMOID, &x, &opts()).unwrap().to_host::<f32>().unwrap();
    assert!(close(&sig, &host.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect::<Vec<_>>()));
    assert_eq!(ops::astype(&x, DType::I32, &opts()).unwrap().to_host::<i32>().unwrap(), (1..=8).collect::<Vec<_>>());

    let row = Array::from_host(&Sharding::replicated(&mesh).unwrap(), &[4], &[10.0f32, 20.0, 30.0, 40.0]).unwrap();
    let sum = ops::binary(BinaryOp::Add, &x, &row, &opts()).unwrap();
    assert_eq!(sum.to_host::<f32>().unwrap(), vec![11.0, 22.0, 33.0, 44.0, 15.0, 26.0, 37.0, 48.0]);
    let gt = ops::binary_scalar(BinaryOp::Gt, &x, 4.5, &opts()).unwrap();
    assert_eq!(gt.to_host::<bool>().unwrap(), vec![false, false, false, false, true, true, true, true]);
    let one_minus = ops::scalar_binary(BinaryOp::Sub, 1.0, &x, &opts()).unwrap();
    assert_eq!(one_minus.to_host::<f32>().unwrap()[..2], [0.0, -1.0]);
    let picked = ops::where_(&gt, &x, &row, &opts()).unwrap().to_host::<f32>().unwrap();
    assert_eq!(picked, vec![10.0, 20.0, 30.0, 40.0, 5.0, 6.0, 7.0, 8.0]);

    let total = ops::reduce(ReduceOp::Sum, &x, &[], false, &opts()).unwrap();
    assert_eq!(total.to_host::<f32>().unwrap(), vec![36.0]);
    assert_eq!(
        ops::reduce(ReduceOp::Mean, &x, &[1], false, &opts()).unwrap().to_host::<f32>().unwrap(),
        vec![2.5, 6.5]
    );
    let kept = ops::reduce(ReduceOp::Max, &x, &[0], true, &opts()).unwrap();
    assert_eq!((kept.shape().unwrap(), kept.to_host::<f32>().unwrap()), (vec![1, 4], vec![5.0, 6.0, 7.0, 8.0]));
    assert_eq!(
        ops::reduce(ReduceOp::Min, &x, &[-1], false, &opts()).unwrap().to_host::<f32>().unwrap(),
        vec![1.0, 5.0]
    );
    assert_eq!(ops::argmax(&x, 1, &opts()).unwrap().to_host::<i32>().unwrap(), vec![3, 3]);
    assert_eq!(ops::argmin(&x, -1, &opts()).unwrap().to_host::<i32>().unwrap(), vec![0, 0]);
    let sm = ops::softmax(&x, -1, false, &opts()).unwrap().to_host::<f32>().unwrap();
    assert!((sm[..4].iter().sum::<f32>() - 1.0).abs() < 1e-5);
    let lsm = ops::softmax(&x, -1, true, &opts()).unwrap().to_host::<f32>().unwrap();
    assert!((lsm[0] - sm[0].ln()).abs() < 1e-5);

    // (2, 4) @ (4, 2)
    let w = Array::arange(&Sharding::named_text(&mesh, "y").unwrap(), DType::F32, &[4, 2], 0.0, 1.0).unwrap();
    let want = vec![40.0, 50.0, 88.0, 114.0];
    assert_eq!(ops::matmul(&x, &w, &opts()).unwrap().to_host::<f32>().unwrap(), want);
    let dims = DotDims { lhs_contract: &[1], rhs_contract: &[0], ..Default::default() };
    assert_eq!(ops::dot_general(&x, &w, &dims, &opts()).unwrap().to_host::<f32>().unwrap(), want);
    assert_eq!(ops::einsum("ij,jk->ik", &x, &w, &opts()).unwrap().to_host::<f32>().unwrap(), want);
    let ww = ops::einsum_n("ij,jk,kl->il", &[&x, &w, &w.transpose(&[]).unwrap()], &opts()).unwrap();
    let w2 = ops::matmul(ops::matmul(&x, &w, &opts()).unwrap(), w.transpose(&[]).unwrap(), &opts()).unwrap();
    assert_eq!(ww.to_host::<f32>().unwrap(), w2.to_host::<f32>().unwrap());
    assert_eq!(ops::einsum_n("ij->j", &[&w], &opts()).unwrap().to_host::<f32>().unwrap(), vec![12.0, 16.0]);
    let bad = DotDims { lhs_contract: &[1], ..Default::default() };
    assert_eq!(ops::dot_general(&x, &w, &bad, &opts()).unwrap_err().status, Status::InvalidArgument);

    let t = ops::transpose(&x, &[], &opts()).unwrap();
    assert_eq!((t.shape().unwrap(), t.to_host::<f32>().unwrap()[..3].to_vec()), (vec![4, 2], vec![1.0, 5.0, 2.0]));
    assert_eq!(ops::transpose(&x, &[1, 0], &opts()).unwrap().shape().unwrap(), vec![4, 2]);
    let r = ops::reshape(&x, &[4, -1], &opts()).unwrap();
    assert_eq!((r.shape().unwrap(), r.to_host::<f32>().unwrap()), (vec![4, 2], host.clone()));
    let bcast = ops::broadcast_to(&row, &[3, 4], &opts()).unwrap();
    assert_eq!(bcast.to_host::<f32>().unwrap()[8..], [10.0, 20.0, 30.0, 40.0]);
    let sl = ops::slice(&x, &[1, 1], &[2, 3], &opts()).unwrap();
    assert_eq!(sl.to_host::<f32>().unwrap(), vec![6.0, 7.0]);
    assert!(ops::slice(&x, &[0], &[1, 1], &opts()).is_err());
    let cat = ops::concatenate(&[&x, &x], 0, &opts()).unwrap();
    assert_eq!(cat.shape().unwrap(), vec![4, 4]);
    assert_eq!(cat.to_host::<f32>().unwrap()[8..], host[..]);

    // out_sharding: with_sharding_constraint.
    let replicated = Sharding::replicated(&mesh).unwrap();
    let constrained = ops::unary(UnaryOp::Neg, &x, &OpOptions::new().out_sharding(&replicated)).unwrap();
    assert!(constrained.sharding().unwrap() == replicated);
    assert_eq!(constrained.to_host::<f32>().unwrap()[0], -1.0);
    let three = Array::zeros(&replicated, DType::F32, &[3]).unwrap();
    let e = ops::binary(BinaryOp::Add, &x, &three, &opts()).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("broadcast"), "{e}");
}

#[test]
fn donation_moves_the_operand_in() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[4], &["x"]).unwrap();
    let s = Sharding::named_text(&mesh, "x").unwrap();
    let x = Array::arange(&s, DType::F32, &[8], 0.0, 1.0).unwrap();
    let y = Array::full(&s, DType::F32, &[8], 1.0).unwrap();
    // x donated, y borrowed; afterwards x is gone (moved), y still usable.
    let z = ops::binary(BinaryOp::Add, x, &y, &opts()).unwrap();
    let z = ops::unary(UnaryOp::Neg, z, &opts()).unwrap();
    assert_eq!(z.to_host::<f32>().unwrap(), (1..=8).map(|v| -(v as f32)).collect::<Vec<_>>());
    assert_eq!(y.to_host::<f32>().unwrap(), vec![1.0; 8]);
}

#[test]
fn shard_map_context_and_collectives() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[2, 2], &["x", "y"]).unwrap();
    let s = Sharding::named_text(&mesh, "x, y").unwrap();
    let a = Array::arange(&s, DType::F32, &[2, 4], 0.0, 1.0).unwrap(); // blocks (1, 2)
    let by_xy = Spec::parse("x, y").unwrap();
    let by_x = Spec::parse("x").unwrap();
    let none = Spec::parse("").unwrap();
    let seen = Mutex::new(Vec::new());
    let outs = mesh
        .shard_map(&[&a], &[&by_xy], &[&by_xy, &by_x, &by_xy, &none, &by_xy, &by_xy], |ctx| {
            let dev = ctx.device_id()?;
            let (ix, iy) = (ctx.axis_index("x")?, ctx.axis_index("y")?);
            assert_eq!(ctx.axis_size("(x, y)")?, 4);
            assert_eq!(ctx.axis_index("(x, y)")?, 2 * ix + iy);
            assert_eq!(ctx.input_count()?, 1);
            assert_eq!(ctx.mesh()?.shape()?, vec![2, 2]);
            seen.lock().unwrap().push(dev);
            let x = ctx.input(0)?;
            assert_eq!(x.shape(), &[1, 2]);
            assert!(!x.is_writable());
            let mut copy = ctx.alloc(DType::F32, x.shape())?;
            copy.as_mut_slice::<f32>()?.copy_from_slice(x.as_slice::<f32>()?);
            let gathered = ctx.all_gather(&copy, "y", 1, true)?; // the whole row: (1, 4)
            assert!(!copy.is_writable(), "a collective's input turns read-only");
            assert!(copy.as_mut_slice::<f32>().is_err());
            let total = ctx.psum(&x, "(x, y)")?; // (1, 2)
            let mean = ctx.pmean(&x, "x")?;
            let max = ctx.pmax(&x, "y")?;
            let min = ctx.pmin(&x, "y")?;
            let mut combined = ctx.alloc(DType::F32, &[1, 2])?;
            for (i, v) in combined.as_mut_slice::<f32>()?.iter_mut().enumerate() {
                *v = mean.as_slice::<f32>()?[i] + max.as_slice::<f32>()?[i] - min.as_slice::<f32>()?[i];
            }
            let shifted = ctx.ppermute(&x, "y", &[(0, 1), (1, 0)])?;
            let scattered = ctx.psum_scatter(&gathered, "y", 1, true)?; // (1, 2): 2 * own row's chunk
            let swapped = ctx.all_to_all(&gathered, "y", 1, 1, true)?;
            ctx.set_output(0, &total)?;
            ctx.set_output(1, &gathered)?;
            ctx.set_output(2, &combined)?;
            let scalar = ctx.alloc_from::<i32>(&[], &[dev as i32])?;
            let devsum = ctx.psum(&scalar, "(x, y)")?;
            ctx.set_output(3, &devsum)?;
            ctx.set_output(4, &shifted)?;
            ctx.set_output(5, &scattered)?;
            assert_eq!(swapped.shape(), &[1, 4]);
            ctx.printf(format_args!("device {dev} done"))
        })
        .unwrap();
    let mut seen = seen.into_inner().unwrap();
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 2, 3]);
    // psum over all devices of blocks [0 1] [2 3] [4 5] [6 7] -> [12 16] everywhere.
    assert_eq!(outs[0].to_host::<f32>().unwrap(), vec![12.0, 16.0, 12.0, 16.0, 12.0, 16.0, 12.0, 16.0]);
    assert_eq!(outs[1].to_host::<f32>().unwrap(), (0..8).map(|v| v as f32).collect::<Vec<_>>());
    // mean over x: [2 3] in column block 0, [4 5] in block 1; max - min over y is 2.
    assert_eq!(outs[2].to_host::<f32>().unwrap(), vec![4.0, 5.0, 6.0, 7.0, 4.0, 5.0, 6.0, 7.0]);
    assert_eq!(outs[3].to_host::<i32>().unwrap(), vec![6]);
    assert_eq!(outs[4].to_host::<f32>().unwrap(), vec![2.0, 3.0, 0.0, 1.0, 6.0, 7.0, 4.0, 5.0]);
    assert_eq!(outs[5].to_host::<f32>().unwrap(), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]);
}

#[test]
fn shard_map_text_specs_and_print_sink() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[4], &["x"]).unwrap();
    let x = Array::arange(&Sharding::single_device(&rt, 0).unwrap(), DType::I32, &[8], 0.0, 1.0).unwrap();
    let lines = Mutex::new(Vec::new());
    let sink = |device: usize, text: &str| lines.lock().unwrap().push(format!("{device}: {text}"));
    let options = ShardMapOptions { check_rep: true, timeout_ms: 10_000, print: Some(&sink) };
    let y = mesh
        .shard_map_text(&[&x], &["x"], &["x"], &options, |ctx| {
            let x = ctx.input(0)?;
            ctx.print(&format!("{:?}", x.as_slice::<i32>()?))?;
            let doubled: Vec<i32> = x.as_slice::<i32>()?.iter().map(|v| 2 * v).collect();
            let out = ctx.alloc_from(x.shape(), &doubled)?;
            ctx.set_output(0, &out)
        })
        .unwrap();
    assert_eq!(y[0].to_host::<i32>().unwrap(), (0..16).step_by(2).collect::<Vec<_>>());
    let mut lines = lines.lock().unwrap().clone();
    lines.sort();
    assert_eq!(lines, vec!["0: [0, 1]", "1: [2, 3]", "2: [4, 5]", "3: [6, 7]"]);
    let e = mesh.shard_map_text(&[&x], &["x,,"], &["x"], &options, |_| Ok(())).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    let e = mesh.shard_map_text(&[&x], &[], &["x"], &options, |_| Ok(())).unwrap_err();
    assert!(e.message.contains("1 inputs but 0 in_specs"), "{e}");
}

#[test]
fn persistent_collectives() {
    let rt = runtime(4);
    let mesh = Mesh::new(&rt, &[4], &["x"]).unwrap();
    let s = Sharding::named_text(&mesh, "x").unwrap();
    let psum = Collective::new(&s, CollectiveKind::Psum, "x", DType::F32, &[8], &CollectiveOptions::default()).unwrap();
    assert!(psum.output_sharding().unwrap() == Sharding::replicated(&mesh).unwrap());
    assert_eq!(psum.output_dtype().unwrap(), DType::F32);
    assert_eq!(psum.output_ndim().unwrap(), 1);
    assert_eq!(psum.output_shape().unwrap(), vec![2]);
    let x = Array::arange(&s, DType::F32, &[8], 0.0, 1.0).unwrap();
    // Executions from two threads at once: the collective is Sync and
    // serialises them.
    std::thread::scope(|scope| {
        let a = scope.spawn(|| psum.execute(&x).unwrap().to_host::<f32>().unwrap());
        let b = scope.spawn(|| psum.execute(&x).unwrap().to_host::<f32>().unwrap());
        assert_eq!(a.join().unwrap(), vec![12.0, 16.0]);
        assert_eq!(b.join().unwrap(), vec![12.0, 16.0]);
    });
    let mut out = Array::zeros(&psum.output_sharding().unwrap(), DType::F32, &[2]).unwrap();
    psum.execute_into(&x, &mut out).unwrap();
    assert_eq!(out.to_host::<f32>().unwrap(), vec![12.0, 16.0]);
    let gather = CollectiveOptions { axis: 0, tiled: true, ..Default::default() };
    let ag = Collective::new(&s, CollectiveKind::AllGather, "x", DType::F32, &[8], &gather).unwrap();
    assert_eq!(ag.execute(&x).unwrap().to_host::<f32>().unwrap(), x.to_host::<f32>().unwrap());
    let perm = CollectiveOptions { pairs: vec![(0, 1), (1, 2), (2, 3), (3, 0)], ..Default::default() };
    let pp = Collective::new(&s, CollectiveKind::Ppermute, "x", DType::F32, &[8], &perm).unwrap();
    assert_eq!(pp.execute(&x).unwrap().to_host::<f32>().unwrap(), vec![6.0, 7.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let e = Collective::new(&s, CollectiveKind::PsumScatter, "x", DType::F32, &[4], &CollectiveOptions::default())
        .unwrap_err();
    assert_eq!(e.status, Status::Unsupported);
    let wrong = Array::zeros(&s, DType::F32, &[4]).unwrap();
    assert_eq!(psum.execute(&wrong).unwrap_err().status, Status::InvalidArgument);
}

#[test]
fn runtime_memory_options() {
    // The CUDA options are accepted, and ignored, by the cpu platform.
    let rt = Runtime::builder()
        .platform(Platform::Cpu)
        .cpu_devices(2)
        .worker_threads(1)
        .devices_per_gpu(4)
        .callback_memory(MemoryKind::Host)
        .build()
        .unwrap();
    assert_eq!(rt.device_count().unwrap(), 2);
    // The sim platform gives callbacks mapped memory only, and nothing but
    // the cpu platform takes plain host memory.
    for kind in [MemoryKind::Device, MemoryKind::Host] {
        let e = Runtime::builder().platform(Platform::Sim).cpu_devices(2).callback_memory(kind).build().unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        assert!(e.message.contains("memory"), "{e}");
    }
}

/// Runs a shard_map on a runtime's first two devices, checking the values
/// read through the blocks' slices, and returns the memory kinds of an
/// input, an allocated block and a collective's result on each device.
fn shard_map_memory_kinds(rt: &Runtime) -> Vec<Option<MemoryKind>> {
    let mesh = Mesh::new(rt, &[2], &["x"]).unwrap();
    let x = Array::from_host(&Sharding::named_text(&mesh, "x").unwrap(), &[4], &[0.0f32, 1.0, 2.0, 3.0]).unwrap();
    let kinds = Mutex::new(vec![None; 6]);
    let (by_x, replicated) = (Spec::parse("x").unwrap(), Spec::parse("").unwrap());
    let out = mesh
        .shard_map(&[&x], &[&by_x], &[&replicated], |ctx| {
            // Host and mapped memory are not queued work: no stream.
            assert_eq!(ctx.stream()?, None);
            let i = ctx.axis_index("x")?;
            let input = ctx.input(0)?;
            let local = ctx.alloc_from(&[], &[input.as_slice::<f32>()?.iter().sum::<f32>()])?;
            let sum = ctx.psum(&local, "x")?;
            assert!(!input.as_ptr().is_null() && !sum.as_ptr().is_null());
            let mut k = kinds.lock().unwrap();
            k[3 * i..3 * i + 3].copy_from_slice(&[input.memory_kind(), local.memory_kind(), sum.memory_kind()]);
            ctx.set_output(0, &sum)
        })
        .unwrap();
    assert_eq!(out[0].to_host::<f32>().unwrap(), vec![6.0]);
    kinds.into_inner().unwrap()
}

#[test]
fn shard_map_blocks_say_where_they_lie() {
    assert_eq!(shard_map_memory_kinds(&runtime(2)), vec![Some(MemoryKind::Host); 6]);
    // The sim platform's devices own memory the host cannot touch; its
    // closures get mapped memory, which the slices read.
    let sim = Runtime::builder().platform(Platform::Sim).cpu_devices(2).worker_threads(1).build().unwrap();
    let info = sim.device_info(0).unwrap();
    assert_eq!((info.memory_bytes, info.compute_capability), (0, 0));
    assert_eq!(shard_map_memory_kinds(&sim), vec![Some(MemoryKind::HostMapped); 6]);
}
