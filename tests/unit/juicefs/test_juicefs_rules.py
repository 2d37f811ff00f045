"""cfcore/juicefs.py: the volume and mount plans, the compare with `juicefs status`, argv, env, scrubbing."""

from __future__ import annotations

import pytest
from cfcore import juicefs as jfs
from cfcore.inputs import InputError

# Setting as juicefs 1.4.2 prints it (captured here from `juicefs format` + `juicefs status` on
# sqlite3 + file storage): zero values omitted, BlockSize in KiB, Capacity in bytes.
SETTING_142 = {
    "Name": "vol1",
    "UUID": "d9498553-2999-4f70-a84e-cdfe5a2d8f07",
    "Storage": "file",
    "Tiers": {"0": {"ID": 0, "StorageClass": "", "Tag": ""}},
    "Bucket": "/var/jfs/",
    "BlockSize": 1024,
    "Compression": "lz4",
    "HashPrefix": True,
    "Capacity": 10737418240,
    "Inodes": 1000,
    "EncryptAlgo": "aes256gcm-rsa",
    "TrashDays": 3,
    "MetaVersion": 1,
    "MinClientVersion": "1.1.0-A",
    "DirStats": True,
    "EnableACL": False,
}
# A 1.x S3 volume with keys and the defaults (no HashPrefix/Shards/Capacity: omitted as zero).
SETTING_S3 = {
    "Name": "jfs",
    "Storage": "s3",
    "Bucket": "http://rgw1:7480/jfs",
    "AccessKey": "AKIAEXAMPLE",
    "SecretKey": "removed",
    "BlockSize": 4096,
    "Compression": "none",
    "TrashDays": 1,
}


def vol(**over):
    entry = {"name": "vol1", "meta_url": "redis://meta1:6379/1", "storage": "file", "bucket": "/var/jfs"}
    entry.update(over)
    return jfs.plan_volume(entry)


def s3(**fmt):
    return jfs.plan_volume(
        {
            "name": "jfs",
            "meta_url": "redis://meta1:6379/1",
            "meta_password": "mpw",
            "storage": "s3",
            "bucket": "http://rgw1:7480/jfs",
            "access_key": "AKIAEXAMPLE",
            "secret_key": "sk/with+chars",
            "region": "default",
            "format": fmt,
        }
    )


def test_plan_defaults_and_normalized_format():
    volume = jfs.plan_volume(
        {
            "name": "jfs",
            "storage": "s3",
            "bucket": "http://b/jfs",
            "format": {"block_size": "4M", "capacity": "10"},
        },
        0,
        default_meta_url="redis://10.0.0.5:6379/1",
        default_meta_password="pw",
    )
    assert volume["meta_url"] == "redis://10.0.0.5:6379/1" and volume["meta_password"] == "pw"
    assert volume["format"]["block_size"] == 4096 and volume["format"]["capacity"] == 10
    assert volume["format"]["trash_days"] is None and volume["format"]["compress"] is None


@pytest.mark.parametrize(
    ("entry", "where", "fix_word"),
    [
        ({"storage": "s3", "bucket": "b"}, "juicefs_volumes[1].name", "name"),
        ({"name": "Bad_Name", "storage": "s3", "bucket": "b"}, "juicefs_volumes[1].name", "lowercase"),
        ({"name": "jfs", "bucket": "b"}, "juicefs_volumes[1].storage", "storage"),
        ({"name": "jfs", "storage": "s3"}, "juicefs_volumes[1].bucket", "bucket"),
        (
            {"name": "jfs", "storage": "s3", "bucket": "b", "access_key": "a"},
            "juicefs_volumes[1].secret_key",
            "both",
        ),
        (
            {"name": "jfs", "storage": "s3", "bucket": "b", "meta_url": "redis://:pw@m:6379/1"},
            ".meta_url",
            "Vault",
        ),
        ({"name": "jfs", "storage": "s3", "bucket": "https://ak:sk@host/b"}, ".bucket", "access_key"),
        ({"name": "jfs", "storage": "s3", "bucket": "b", "meta_url": "http://m/1"}, ".meta_url", "redis"),
        (
            {"name": "jfs", "storage": "s3", "bucket": "b", "format": {"compress": "gzip"}},
            ".format.compress",
            "lz4",
        ),
        (
            {"name": "jfs", "storage": "s3", "bucket": "b", "format": {"block_size": "32K"}},
            ".format.block_size",
            "64K",
        ),
        (
            {"name": "jfs", "storage": "s3", "bucket": "b", "format": {"trash_days": -1}},
            ".format.trash_days",
            "days",
        ),
        (
            {"name": "jfs", "storage": "s3", "bucket": "b", "format": {"blocksize": 4}},
            ".format",
            "block_size",
        ),
        ({"name": "jfs", "storage": "s3", "bucket": "b", "mountpoint": "/x"}, "juicefs_volumes[1]", "region"),
    ],
)
def test_plan_errors_name_the_field_and_the_fix(entry, where, fix_word):
    entry = dict({"meta_url": "redis://m:6379/1"}, **entry)
    with pytest.raises(InputError) as err:
        jfs.plan_volume(entry, 1)
    assert where in err.value.message and fix_word in err.value.fix


def test_plan_without_any_meta_url_says_where_to_set_it():
    with pytest.raises(InputError) as err:
        jfs.plan_volume({"name": "jfs", "storage": "s3", "bucket": "b"}, 0)
    assert "juicefs_volumes[0].meta_url" in err.value.message and "juicefs_meta" in err.value.fix


def test_plan_volumes_refuses_duplicate_names():
    entry = {"name": "jfs", "meta_url": "redis://m/1", "storage": "s3", "bucket": "b"}
    with pytest.raises(InputError, match=r"juicefs_volumes\[1\]\.name 'jfs' is also juicefs_volumes\[0\]"):
        jfs.plan_volumes([entry, dict(entry)])
    assert jfs.plan_volumes(None) == []


@pytest.mark.parametrize(
    ("text", "kib"), [(4096, 4096), ("4M", 4096), ("1024K", 1024), ("4MiB", 4096), ("64", 64)]
)
def test_block_size_units(text, kib):
    assert jfs.block_size_kib(text, "x") == kib


def test_compare_equal_1_4_2_setting_is_no_difference():
    volume = vol(format={"block_size": "1M", "compress": "lz4", "hash_prefix": True, "capacity": 10})
    volume["format"].update(inodes=1000, trash_days=3)
    assert jfs.compare(volume, SETTING_142)["differences"] == []


def test_compare_splits_mutable_and_immutable():
    volume = vol(bucket="/srv/jfs", format={"trash_days": 7, "capacity": 20, "block_size": 4096, "shards": 2})
    found = jfs.compare(volume, SETTING_142)
    assert [d["setting"] for d in found["mutable"]] == ["bucket", "trash_days", "capacity"]
    assert [d["setting"] for d in found["immutable"]] == ["block_size", "shards"]
    capacity = next(d for d in found["mutable"] if d["setting"] == "capacity")
    assert capacity["current"] == "10737418240 bytes (10 GiB)" and capacity["desired"] == "20 GiB"
    assert capacity["status_key"] == "Capacity"


def test_compare_omitted_zero_values_and_secret_key():
    # HashPrefix/Shards/Capacity/Inodes omitted by juicefs = false/0; SecretKey "removed" is never compared.
    found = jfs.compare(s3(hash_prefix=False, shards=0, capacity=0, inodes=0, trash_days=1), SETTING_S3)
    assert found["differences"] == []


def test_compare_other_access_key_is_refused_without_values():
    volume = s3()
    volume["access_key"] = "AKIANEW"
    found = jfs.compare(volume, SETTING_S3)
    assert [d["setting"] for d in found["immutable"]] == ["access_key"]
    assert "AKIA" not in repr(found)
    assert "command line" in jfs.refusal(volume, found["immutable"])


def test_compare_other_name_is_refused():
    found = jfs.compare(vol(name="other"), SETTING_142)
    message = jfs.refusal(vol(name="other"), found["immutable"])
    assert "holds volume 'vol1', not 'other'" in message


def test_refusal_names_setting_both_values_and_why():
    volume = vol(format={"block_size": "4M"})
    message = jfs.refusal(volume, jfs.compare(volume, SETTING_142)["immutable"])
    assert "block_size is '1024 KiB' in the volume (status BlockSize)" in message
    assert "wants '4096 KiB'" in message and "never re-formats" in message


def test_format_argv_has_options_and_no_secret():
    volume = s3(
        block_size="4M", compress="lz4", trash_days=0, capacity=100, inodes=10, hash_prefix=True, shards=0
    )
    argv = jfs.format_argv("/usr/local/bin/juicefs", volume)
    assert argv[:6] == [
        "/usr/local/bin/juicefs",
        "format",
        "--storage",
        "s3",
        "--bucket",
        "http://rgw1:7480/jfs",
    ]
    for flag, value in (
        ("--block-size", "4096"),
        ("--compress", "lz4"),
        ("--trash-days", "0"),
        ("--capacity", "100"),
    ):
        assert argv[argv.index(flag) + 1] == value
    assert "--hash-prefix" in argv and argv[-3:] == ["--no-update", "redis://meta1:6379/1", "jfs"]
    assert not {"mpw", "AKIAEXAMPLE", "sk/with+chars"} & set(argv)


def test_config_argv_sets_only_the_mutable_differences():
    volume = s3(trash_days=7, capacity=5)
    found = jfs.compare(volume, SETTING_S3)
    argv = jfs.config_argv("juicefs", volume, found["mutable"])
    assert argv == [
        "juicefs",
        "config",
        "--yes",
        "--trash-days",
        "7",
        "--capacity",
        "5",
        "redis://meta1:6379/1",
    ]
    assert "--force" not in argv


def test_secret_env_uses_the_names_juicefs_reads():
    assert jfs.secret_env(s3()) == {
        "META_PASSWORD": "mpw",
        "ACCESS_KEY": "AKIAEXAMPLE",
        "SECRET_KEY": "sk/with+chars",
        "AWS_REGION": "default",
    }
    assert jfs.secret_env(vol()) == {}


def test_not_formatted_detection():
    assert jfs.is_not_formatted("<FATAL>: get status: load setting: database is not formatted, please run")
    assert jfs.is_not_formatted("volume is not formatted")
    assert not jfs.is_not_formatted("<FATAL>: load setting: WRONGPASS invalid username-password pair")


def test_scrub_masks_secrets_and_url_passwords():
    text = "AccessKey:AKIAEXAMPLE SecretKey:sk/with+chars rediss://default:hunter2@host:6379/1"
    clean = jfs.scrub(text, ["AKIAEXAMPLE", "sk/with+chars", "", None])
    assert "AKIA" not in clean and "sk/with" not in clean and "hunter2" not in clean
    assert "rediss://default:********@host" in clean
    assert jfs.scrub_setting(SETTING_S3)["AccessKey"] == "********"
    assert jfs.scrub_setting(SETTING_S3)["SecretKey"] == "removed"


def test_mount_plan_defaults_from_design():
    volumes = [vol(name="jfs")]
    (mount,) = jfs.plan_mounts([{"volume": "jfs", "path": "/mnt/jfs/"}], volumes)
    assert mount["path"] == "/mnt/jfs" and mount["cache_dir"] == "/var/cache/juicefs"
    assert (mount["cache_size_mib"], mount["buffer_size_mib"], mount["prefetch"]) == (102400, 1024, 3)
    assert (mount["free_space_ratio"], mount["open_cache_s"], mount["max_uploads"]) == (0.1, 0, 20)
    assert mount["writeback"] is False and mount["options"] == []
    argv = jfs.mount_argv("/usr/local/bin/juicefs", mount, volumes[0], ["--no-usage-report"])
    assert argv[:2] == ["/usr/local/bin/juicefs", "mount"] and argv[-2:] == [
        "redis://meta1:6379/1",
        "/mnt/jfs",
    ]
    assert argv[argv.index("--open-cache") + 1] == "0s" and "--no-usage-report" in argv
    assert "--writeback" not in argv and "-d" not in argv and "--background" not in argv


def test_mount_options_and_writeback():
    volumes = [vol(name="jfs")]
    entry = {
        "volume": "jfs",
        "path": "/data",
        "writeback": True,
        "open_cache_s": 60,
        "options": ["--read-only"],
    }
    argv = jfs.mount_argv("juicefs", jfs.plan_mounts([entry], volumes)[0], volumes[0])
    assert "--writeback" in argv and argv[argv.index("--open-cache") + 1] == "60s"
    assert argv.index("--read-only") < argv.index("redis://meta1:6379/1")


@pytest.mark.parametrize(
    ("mounts", "where", "fix_word"),
    [
        ([{"volume": "nope", "path": "/mnt/x"}], "juicefs_mounts[0].volume", "add the volume"),
        ([{"volume": "jfs", "path": "mnt"}], "juicefs_mounts[0].path", "absolute"),
        ([{"volume": "jfs", "path": "/"}], "juicefs_mounts[0].path", "absolute"),
        (
            [{"volume": "jfs", "path": "/a"}, {"volume": "jfs", "path": "/b"}],
            "juicefs_mounts[1].volume",
            "once",
        ),
        ([{"volume": "jfs", "path": "/a", "prefetch": "many"}], "juicefs_mounts[0].prefetch", "whole number"),
        (
            [{"volume": "jfs", "path": "/a", "free_space_ratio": 2}],
            "juicefs_mounts[0].free_space_ratio",
            "0.9",
        ),
        ([{"volume": "jfs", "path": "/a", "options": "--writeback"}], "juicefs_mounts[0].options", "list"),
        ([{"volume": "jfs", "path": "/a", "cache": "/x"}], "juicefs_mounts[0]", "cache_dir"),
    ],
)
def test_mount_errors(mounts, where, fix_word):
    with pytest.raises(InputError) as err:
        jfs.plan_mounts(mounts, [vol(name="jfs")])
    assert where in err.value.message and fix_word in err.value.fix


def test_systemd_command_quotes_and_escapes_percent():
    line = jfs.systemd_command(["juicefs", "mount", "-o", "a b", "--x=50%", "redis://m/1"])
    assert line == 'juicefs mount -o "a b" --x=50%% redis://m/1'
