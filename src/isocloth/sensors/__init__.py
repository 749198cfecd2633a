"""Simulated cameras: pinhole intrinsics and pose, RGB, depth, segmentation masks and point clouds
of the cloth and the obstacles, with depth-sensor noise models (:mod:`.camera`, :mod:`.raycast`,
:mod:`.noise`)."""

from isocloth.sensors.camera import PinholeCamera, azure_kinect_nfov, look_at, realsense_d435
from isocloth.sensors.noise import DepthNoise
from isocloth.sensors.raycast import LABEL_CLOTH, LABEL_NONE, CameraSensor, SensorFrame

__all__ = ["PinholeCamera", "look_at", "realsense_d435", "azure_kinect_nfov", "DepthNoise", "CameraSensor", "SensorFrame",
           "LABEL_NONE", "LABEL_CLOTH"]
