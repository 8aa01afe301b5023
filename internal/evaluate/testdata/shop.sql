-- A tiny database in the shape of InterCode's MySQL dumps.
CREATE DATABASE IF NOT EXISTS `shop`;
USE `shop`;
CREATE TABLE `item` (`id` int NOT NULL, `name` text, `price` double, PRIMARY KEY (`id`));
INSERT INTO `item` VALUES (1,'pen',1.5),(2,'book',12),(3,'lamp',30);
